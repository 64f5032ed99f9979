# Laya — one hand-written Makefile. Targets: all (default), test, bench, profile (per-phase step timing,
# build/prof/laya-profile), asan, fuzz, neon-test, clean.
CC      ?= cc
BUILD   ?= build
OPT     ?= -O2
WERROR  ?=
DEFS    ?=
CFLAGS  ?=
CFLAGS  += -std=c11 $(OPT) -g -Wall -Wextra -Wshadow $(WERROR) -fPIC -fvisibility=hidden \
           -D_GNU_SOURCE -Iinclude -MMD -MP
# The library, its tests and the dev programs see the internal headers; the command line does not.
LIB_CFLAGS := -DLAYA_BUILD $(DEFS) -Isrc
LDLIBS  += -lm -lpthread

ARCH := $(shell $(CC) -dumpmachine)
# One folder a layer (docs/ARCHITECTURE.md): base, io, tokenizer, engine, typing; the kernels by ISA.
LAYERS  := base io tokenizer engine typing
LIB_SRC := $(foreach d,$(LAYERS),$(wildcard src/$(d)/*.c)) src/kernels/kernels.c src/kernels/kernels_ref.c
ifneq (,$(findstring x86_64,$(ARCH)))
LIB_SRC += $(wildcard src/kernels/x86/*.c)
endif
ifneq (,$(findstring aarch64,$(ARCH)))
LIB_SRC += $(wildcard src/kernels/arm/*.c)
endif
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)

TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

all: $(BUILD)/laya $(BUILD)/liblaya.a $(BUILD)/liblaya.so $(BUILD)/laya-synth

# Per-file ISA flags: intrinsics only in these files; the dispatcher picks one at run time.
$(BUILD)/src/kernels/x86/kernels_avx2.o: CFLAGS += -mavx2 -mfma -mf16c
$(BUILD)/src/kernels/x86/kernels_avxvnni.o: CFLAGS += -mavx2 -mfma -mf16c -mavxvnni
$(BUILD)/src/kernels/arm/kernels_neondot.o: CFLAGS += -march=armv8.2-a+dotprod
$(BUILD)/src/kernels/x86/kernels_avx512.o: CFLAGS += -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx2 -mfma -mf16c
# Every loop of the kernels starts on a 64-byte line, so a step's speed does not depend on where the linker
# puts the kernel code (an unrelated change could otherwise move it and cost several percent).
$(BUILD)/src/kernels/%.o: CFLAGS += -falign-loops=64

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -c $< -o $@

$(BUILD)/liblaya.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/liblaya.so: $(LIB_OBJ)
	$(CC) -shared -o $@ $^ $(LDLIBS)

# The command line is a client of include/laya.h alone (issue 42): built without -Isrc, so an internal
# include fails here, and linked against liblaya.so, whose exports are the public API; '$$ORIGIN' finds the
# library beside the binary wherever build/ is.
CLI_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tools/*.c) eval/harness.c)
$(CLI_OBJ): $(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itools -c $< -o $@
$(BUILD)/laya: $(CLI_OBJ) $(BUILD)/liblaya.so
	$(CC) -o $@ $(CLI_OBJ) -L$(BUILD) -llaya -Wl,-rpath,'$$ORIGIN' $(LDLIBS)

# Dev programs (bench/): random-weight models of real shapes. They may use internal headers.
$(BUILD)/laya-synth: $(BUILD)/bench/synth_main.o $(BUILD)/bench/synth.o $(BUILD)/liblaya.a
	$(CC) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(BUILD)/liblaya.a
	$(CC) -o $@ $^ $(LDLIBS)
# the command line's JSON, checked against the library's
$(BUILD)/tests/test_cli_json: $(BUILD)/tools/cli_json.o

# Parity fixtures: the committed F16 exports, decompressed, and the other FIXTURE_TYPES made from them by Laya.
FIXTURE_MODELS := llama qwen2 qwen3
FIXTURE_TYPES := f16 f32 q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl
FIXTURES := $(foreach m,$(FIXTURE_MODELS),$(foreach t,$(FIXTURE_TYPES),$(BUILD)/fixtures/tiny-$(m)-$(t).gguf))
$(BUILD)/fixtures/tiny-%-f16.gguf: tests/fixtures/models/tiny-%-f16.gguf.xz
	@mkdir -p $(dir $@)
	xz -dc $< > $@.tmp && mv $@.tmp $@
# one rule per derived type (laya quantize takes the type name in any case)
define QUANT_FIXTURE
$$(BUILD)/fixtures/tiny-%-$(1).gguf: $$(BUILD)/fixtures/tiny-%-f16.gguf $$(BUILD)/laya
	$$(BUILD)/laya quantize $$< $$@ $(1) > /dev/null
endef
$(foreach t,$(filter-out f16,$(FIXTURE_TYPES)),$(eval $(call QUANT_FIXTURE,$(t))))

# Hugging Face / MLX model directories, unpacked.
HF_MODELS := hf-llama-bf16 hf-qwen2-f32 hf-qwen3-bf16 mlx-llama mlx-qwen3
HF_FIXTURES := $(HF_MODELS:%=$(BUILD)/fixtures/hf/%/config.json)
$(BUILD)/fixtures/hf/%/config.json: tests/fixtures/hf/%.tar.xz
	@mkdir -p $(BUILD)/fixtures/hf
	rm -rf $(BUILD)/fixtures/hf/$*
	tar -xJf $< -C $(BUILD)/fixtures/hf
	touch $@

fixtures: $(FIXTURES) $(HF_FIXTURES)

# The main job on the bundled model: a greedy continuation.
demo: all
	$(BUILD)/laya info
	$(BUILD)/laya suggest "Thank you for your help with the rep"
	$(BUILD)/laya suggest "I will send it to you "
	$(BUILD)/laya run -p "<|endoftext|><|prose|>The meeting is moved to" -n 24

# NEON kernels are cross-compiled and run under qemu-user when the tools are installed (CI installs them).
HAVE_CROSS := $(shell command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 && command -v qemu-aarch64 >/dev/null 2>&1 && echo 1)
NEON_TESTS := test_kernels test_quant

test: all $(TEST_BIN) $(FIXTURES) $(HF_FIXTURES)
ifeq ($(HAVE_CROSS)$(findstring x86_64,$(ARCH)),1x86_64)
	@$(MAKE) --no-print-directory CC=aarch64-linux-gnu-gcc BUILD=$(BUILD)/aarch64 $(addprefix $(BUILD)/aarch64/tests/,$(NEON_TESTS))
else
	@echo "note: aarch64 cross tools not found; NEON kernel tests not run (apt-get install gcc-aarch64-linux-gnu qemu-user)"
endif
	@bash tests/run.sh $(BUILD)

bench: all
	@bash bench/run.sh $(BUILD)

# A copy of the library with the per-phase timers (engine/fwprof.h, -DLAYA_PROFILE) in build/prof/, and
# bench/profile.c on it: build/prof/laya-profile -m MODEL [--threads N] [--reps N].
profile:
	$(MAKE) BUILD=build/prof DEFS=-DLAYA_PROFILE build/prof/laya-profile
$(BUILD)/laya-profile: $(BUILD)/bench/profile.o $(BUILD)/liblaya.a
	$(CC) -o $@ $^ $(LDLIBS)

# Tests under AddressSanitizer and UndefinedBehaviorSanitizer, in a separate build tree.
asan:
	$(MAKE) HAVE_CROSS= BUILD=build/asan OPT="-O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" \
	    LDLIBS="-lm -lpthread -fsanitize=address,undefined" test

# libFuzzer targets (clang). FUZZ_SECONDS per target; corpora under tests/fuzz/.
FUZZ_SECONDS ?= 30
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
fuzz: fixtures
	@mkdir -p build/fuzz
	@for t in $(FUZZ_TARGETS); do \
	  clang -std=c11 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -D_GNU_SOURCE -DLAYA_BUILD -Iinclude -Isrc \
	    tests/fuzz/fuzz_$$t.c $(foreach d,$(LAYERS),$(wildcard src/$(d)/*.c)) src/kernels/kernels.c src/kernels/kernels_ref.c \
	    -DLAYA_NO_SIMD -lm -lpthread -o build/fuzz/fuzz_$$t || exit 1; \
	  mkdir -p build/fuzz/corpus_$$t; \
	  build/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) build/fuzz/corpus_$$t tests/fuzz/corpus_$$t || exit 1; \
	done

# NEON kernels alone: cross-compile for aarch64 and run the kernel tests under qemu-user.
neon-test:
	$(MAKE) CC=aarch64-linux-gnu-gcc BUILD=build/aarch64 $(addprefix build/aarch64/tests/,$(NEON_TESTS))
	for t in $(NEON_TESTS); do QEMU_LD_PREFIX=/usr/aarch64-linux-gnu qemu-aarch64 build/aarch64/tests/$$t || exit 1; done

clean:
	rm -rf $(BUILD)


.PHONY: demo fixtures all test bench profile asan fuzz neon-test clean
.SECONDARY:
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
