/* cmd_files.c — the subcommands that write model files: quantize (re-encode a GGUF), annotate (add
 * typing metadata) and convert (a Hugging Face / MLX directory). Thin wrappers over the public API.
 * Not here: downloading or converting models from other formats. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define HELP_QUANTIZE                                                                                   \
    "usage: laya quantize IN.gguf OUT.gguf TYPE\n"                                                      \
    "Re-encodes every 2-D weight matrix to TYPE (F32, F16, Q8_0, Q5_0, Q5_1, Q4_0, Q4_1 or IQ4_NL)\n"   \
    "through F32, row by row (below 8 bits the output matrix becomes Q6_K, or Q8_0 where its rows are\n" \
    "not whole super-blocks); 1-D tensors (norms, biases) become F32; metadata is copied with\n"       \
    "general.file_type updated.\n"                                                                     \
    "OUT is written to a temporary file first and renamed into place only when complete.\n"

#define HELP_CONVERT                                                                                    \
    "usage: laya convert MODEL_DIR OUT.gguf [--type F32|F16|Q8_0|Q4_0]\n"                              \
    "Writes a Hugging Face model directory (config.json, tokenizer.json, safetensors; F32/F16/BF16 or\n"  \
    "MLX 4/8-bit) as a GGUF file that llama.cpp loads too. --type defaults to F16.\n"

int cmd_quantize(int argc, char **argv) {
    const char *pos[3];
    int n_pos = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(HELP_QUANTIZE, stdout);
            return CLI_OK;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error("quantize", "unknown option '%s'", argv[i]);
        if (n_pos == 3) return cli_usage_error("quantize", "too many arguments");
        pos[n_pos++] = argv[i];
    }
    if (n_pos != 3) return cli_usage_error("quantize", "expected IN.gguf OUT.gguf TYPE");
    char err[LAYA_ERR_MSG_MAX] = "";
    laya_status st = laya_quantize_file(pos[0], pos[1], pos[2], err, sizeof err);
    if (st) return cli_fail("quantize: %s", err[0] ? err : laya_status_str(st));
    return CLI_OK;
}

#define HELP_ANNOTATE                                                                                        \
    "usage: laya annotate IN.gguf OUT.gguf [--words FILE] [--calibration FILE]\n"                              \
    "Copies a GGUF model with Laya's typing metadata added or replaced; tensors are copied as they are.\n"   \
    "  --words FILE        known words for typo decisions, lines \"word count\" (laya.words)\n"               \
    "  --calibration FILE  confidence map, lines \"prob hit\" from laya eval --fit-calibration\n"            \
    "                      (laya.calibration.*; fit it for this file: quantizing drops it)\n"

int cmd_annotate(int argc, char **argv) {
    argp p = {"annotate", argc, argv, 0, 0};
    const char *pos[2], *words = NULL, *calib = NULL;
    int n_pos = 0;
    for (p.i = 0; p.i < argc; p.i++) {
        const char *v;
        if (arg_help(&p)) {
            fputs(HELP_ANNOTATE, stdout);
            return CLI_OK;
        }
        if ((v = arg_str(&p, NULL, "--words"))) words = v;
        else if ((v = arg_str(&p, NULL, "--calibration"))) calib = v;
        else if (p.bad) return CLI_USAGE;
        else if (argv[p.i][0] == '-' && argv[p.i][1]) return cli_usage_error("annotate", "unknown option '%s'", argv[p.i]);
        else if (n_pos == 2) return cli_usage_error("annotate", "too many arguments");
        else pos[n_pos++] = argv[p.i];
    }
    if (n_pos != 2) return cli_usage_error("annotate", "expected IN.gguf OUT.gguf");
    if (!words && !calib) return cli_usage_error("annotate", "nothing to add: give --words and/or --calibration");
    char err[LAYA_ERR_MSG_MAX] = "";
    laya_status st = laya_annotate_file(pos[0], pos[1], words, calib, err, sizeof err);
    if (st) return cli_fail("annotate: %s", err[0] ? err : laya_status_str(st));
    return CLI_OK;
}

int cmd_convert(int argc, char **argv) {
    argp p = {"convert", argc, argv, 0, 0};
    const char *pos[2], *type = "F16";
    int n_pos = 0;
    for (p.i = 0; p.i < argc; p.i++) {
        const char *v;
        if (arg_help(&p)) {
            fputs(HELP_CONVERT, stdout);
            return CLI_OK;
        }
        if ((v = arg_str(&p, NULL, "--type"))) type = v;
        else if (p.bad) return CLI_USAGE;
        else if (argv[p.i][0] == '-' && argv[p.i][1]) return cli_usage_error("convert", "unknown option '%s'", argv[p.i]);
        else if (n_pos == 2) return cli_usage_error("convert", "too many arguments");
        else pos[n_pos++] = argv[p.i];
    }
    if (n_pos != 2) return cli_usage_error("convert", "expected MODEL_DIR OUT.gguf");
    char err[LAYA_ERR_MSG_MAX] = "";
    laya_status st = laya_convert(pos[0], pos[1], type, err, sizeof err);
    if (st) return cli_fail("convert: %s", err[0] ? err : laya_status_str(st));
    return CLI_OK;
}
