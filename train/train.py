#!/usr/bin/env python3
"""Train Laya's default typing model: a byte-level BPE tokenizer, then a small Llama, on one GPU.

  train.py tokenizer DATA_DIR OUT_DIR              BPE from the train split of part A (tokenizers library)
  train.py train DATA_DIR TOK_DIR OUT_DIR          the model; writes a Hugging Face directory to OUT_DIR

DATA_DIR holds A, B and C.jsonl.xz from train/data/build.py. Settings come from train/config.json.
The model directory (config.json, tokenizer.json, F16 safetensors shards + index) is what
`laya convert OUT_DIR models/laya-typing-q8_0.gguf --type Q8_0` turns into the shipped GGUF file.
Needs PyTorch (and for the tokenizer stage the `tokenizers` package); runs on CPU for smoke tests
(LAYA_SMOKE=1 shrinks everything).
"""
import json
import lzma
import math
import os
import random
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CFG = json.load(open(os.path.join(HERE, "config.json")))
SMOKE = os.environ.get("LAYA_SMOKE") == "1"
KINDS = ["prose", "code", "shell", "zh"]
# Narrative and conversational prose (speeches, e-mail, two Bibles, Spurgeon, Bierce, fortunes, the Jargon
# File, Moby-Dick) is a mix group of its own, "story", so its share of the rows is set apart from the
# technical documentation that makes up most of the prose; its documents still carry the <|prose|> token.
STORY_SRC = {"sotu", "spam_ham", "bible", "web_bible", "tdavid", "devil", "fortunes", "jargon", "moby"}
GROUPS = KINDS + ["story"]
GROUP_TOKEN = {"story": "prose"}
# Qwen2's split (tokenizer.json form): letters with one leading non-letter, single digits, punctuation runs.
SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
         r"\s*[\r\n]+|\s+(?!\S)|\s+")


def log(*a):
    print(*a, flush=True)


def read_docs(data_dir, parts="ABC"):
    for p in parts:
        path = os.path.join(data_dir, f"{p}.jsonl.xz")
        if not os.path.exists(path):
            continue
        with lzma.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                yield json.loads(line)


# ---- tokenizer -----------------------------------------------------------------------------------

def train_tokenizer(data_dir, out_dir):
    from tokenizers import Tokenizer, Regex, decoders, models, pre_tokenizers, trainers
    tc = CFG["tokenizer"]
    scale = float(os.environ.get("LAYA_TOK_SAMPLE_SCALE", "1"))
    budget = {k: int(v * 1e6 * scale) for k, v in tc["sample_mb"].items()}
    texts, got = [], {k: 0 for k in KINDS}
    for d in read_docs(data_dir, "A"):
        k = d["kind"]
        if d["split"] != "train" or got[k] >= budget[k]:
            continue
        texts.append(d["text"])
        got[k] += len(d["text"].encode())
    log("tokenizer sample bytes", got)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=tc["vocab_size"], min_frequency=2, show_progress=False,
                                  special_tokens=tc["special_tokens"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    t0 = time.time()
    tok.train_from_iterator(texts, trainer, length=len(texts))
    log(f"tokenizer trained in {time.time() - t0:.1f} s, vocab {tok.get_vocab_size()}")
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    json.dump({"bos_token": None, "eos_token": "<|endoftext|>", "add_bos_token": False,
               "model_max_length": CFG["model"]["max_position_embeddings"],
               "tokenizer_class": "PreTrainedTokenizerFast"},
              open(os.path.join(out_dir, "tokenizer_config.json"), "w"), indent=1)
    # characters per token on validation text, per kind
    enc, docs = {k: [0, 0] for k in KINDS}, []
    for d in read_docs(data_dir, "A"):
        if d["split"] == "valid" and enc[d["kind"]][0] < 1_000_000:
            enc[d["kind"]][0] += len(d["text"])
            docs.append(d)
    for d, e in zip(docs, tok.encode_batch([d["text"] for d in docs])):
        enc[d["kind"]][1] += len(e.ids)
    log("valid chars/token", {k: round(c / max(1, t), 3) for k, (c, t) in enc.items()})


# ---- model ---------------------------------------------------------------------------------------

def build_model(torch):
    nn, F = torch.nn, torch.nn.functional
    mc = CFG["model"]

    class RMSNorm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))

        def forward(self, x):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + mc["rms_norm_eps"])).type_as(x) * self.weight

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            d, hd = mc["hidden_size"], mc["head_dim"]
            self.nh, self.nkv, self.hd = mc["num_attention_heads"], mc["num_key_value_heads"], hd
            self.input_layernorm = RMSNorm(d)
            self.post_attention_layernorm = RMSNorm(d)
            self.q_proj = nn.Linear(d, self.nh * hd, bias=False)
            self.k_proj = nn.Linear(d, self.nkv * hd, bias=False)
            self.v_proj = nn.Linear(d, self.nkv * hd, bias=False)
            self.o_proj = nn.Linear(self.nh * hd, d, bias=False)
            self.gate_proj = nn.Linear(d, mc["intermediate_size"], bias=False)
            self.up_proj = nn.Linear(d, mc["intermediate_size"], bias=False)
            self.down_proj = nn.Linear(mc["intermediate_size"], d, bias=False)
            # residual dropout: the story rows are seen about 8 times in a run
            self.drop = nn.Dropout(float(os.environ.get("LAYA_DROPOUT", CFG["train"].get("dropout", 0.0))))

        def forward(self, x, cos, sin):
            B, T, _ = x.shape
            h = self.input_layernorm(x)
            q = self.q_proj(h).view(B, T, self.nh, self.hd).transpose(1, 2)
            k = self.k_proj(h).view(B, T, self.nkv, self.hd).transpose(1, 2)
            v = self.v_proj(h).view(B, T, self.nkv, self.hd).transpose(1, 2)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
            rep = self.nh // self.nkv
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
            if hasattr(F, "scaled_dot_product_attention"):
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:  # PyTorch < 2 (the CPU smoke test on Debian's torch)
                att = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd)
                att = att.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
                a = att.softmax(-1) @ v
            x = x + self.drop(self.o_proj(a.transpose(1, 2).reshape(B, T, -1)))
            h = self.post_attention_layernorm(x)
            return x + self.drop(self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h)))

    def rope(x, cos, sin):  # transformers' rotate-half convention
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(mc["vocab_size"], mc["hidden_size"])
            self.layers = nn.ModuleList([Block() for _ in range(mc["num_hidden_layers"])])
            self.norm = RMSNorm(mc["hidden_size"])
            hd = mc["head_dim"]
            inv = 1.0 / (mc["rope_theta"] ** (torch.arange(0, hd, 2).float() / hd))
            t = torch.arange(mc["max_position_embeddings"]).float()
            f = torch.outer(t, inv)
            emb = torch.cat((f, f), dim=-1)
            self.register_buffer("cos", emb.cos(), persistent=False)
            self.register_buffer("sin", emb.sin(), persistent=False)
            for n, p in self.named_parameters():
                if p.dim() == 2:
                    std = 0.02 / math.sqrt(2 * mc["num_hidden_layers"]) if n.endswith(("o_proj.weight", "down_proj.weight")) else 0.02
                    nn.init.normal_(p, 0.0, std)

        def forward(self, idx):
            T = idx.shape[1]
            x = self.embed_tokens(idx)
            cos, sin = self.cos[:T].to(x.dtype), self.sin[:T].to(x.dtype)
            for l in self.layers:
                x = l(x, cos, sin)
            return F.linear(self.norm(x), self.embed_tokens.weight)

    return Llama()


def hf_state(model):
    """Parameter names as transformers' LlamaForCausalLM has them (tied output: no lm_head)."""
    out = {}
    for n, p in model.state_dict().items():
        if n in ("cos", "sin"):
            continue
        if n.startswith("layers."):
            i, rest = n.split(".", 2)[1:]
            sub = "self_attn." if rest.split(".")[0] in ("q_proj", "k_proj", "v_proj", "o_proj") else \
                "mlp." if rest.split(".")[0] in ("gate_proj", "up_proj", "down_proj") else ""
            n = f"layers.{i}.{sub}{rest}"
        out["model." + n] = p
    return out


def write_safetensors_shards(tensors, out_dir, max_bytes=15 << 20):
    """F16 safetensors, sharded so no file exceeds max_bytes (the device returns files of 16 MiB at most)."""
    import numpy as np
    shards, cur, size = [], [], 0
    for name in sorted(tensors):
        a = tensors[name].detach().float().cpu().numpy().astype(np.float16)
        if cur and size + a.nbytes > max_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append((name, a))
        size += a.nbytes
    shards.append(cur)
    weight_map, total = {}, 0
    for i, shard in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        header, off = {"__metadata__": {"format": "pt"}}, 0
        for name, a in shard:
            header[name] = {"dtype": "F16", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
            off += a.nbytes
            weight_map[name] = fname
        hb = json.dumps(header).encode()
        hb += b" " * (-len(hb) % 8)
        with open(os.path.join(out_dir, fname), "wb") as f:
            f.write(struct.pack("<Q", len(hb)) + hb)
            for _, a in shard:
                f.write(a.tobytes())
        total += off
    json.dump({"metadata": {"total_size": total}, "weight_map": weight_map},
              open(os.path.join(out_dir, "model.safetensors.index.json"), "w"), indent=1)


# ---- data ----------------------------------------------------------------------------------------

def fim_examples(text, rng, sp, n):
    """Prefix-suffix-middle examples from one code document: the middle is the rest of a line (sometimes
    a few lines), as an editor completion would be."""
    out = []
    for _ in range(n):
        p1 = rng.randrange(0, len(text))
        nl = text.find("\n", p1)
        p2 = len(text) if nl < 0 else nl
        for _ in range(rng.choice([0, 0, 0, 1, 2])):
            nx = text.find("\n", p2 + 1)
            p2 = len(text) if nx < 0 else nx
        pre, mid, suf = text[max(0, p1 - 1200):p1], text[p1:p2], text[p2:p2 + 500]
        out.append((pre, suf, mid))
    return out


def tokenize_all(data_dir, tok_dir, rng):
    from tokenizers import Tokenizer
    import numpy as np
    tok = Tokenizer.from_file(os.path.join(tok_dir, "tokenizer.json"))
    sp = {t: tok.token_to_id(t) for t in CFG["tokenizer"]["special_tokens"]}
    eot = sp["<|endoftext|>"]
    streams = {s: {k: [] for k in GROUPS + ["fim"]} for s in ("train", "valid", "test")}
    nbytes = {s: {k: 0 for k in GROUPS} for s in ("train", "valid", "test")}
    batch, meta = [], []
    fim_rate = CFG["train"]["fim_rate_per_kb"]

    for d in read_docs(data_dir):
        k, s, t = d["kind"], d["split"], d["text"]
        if k == "prose" and d.get("src") in STORY_SRC:
            k = "story"
        if SMOKE and rng.random() < 0.97:
            continue
        nbytes[s][k] += len(t.encode())
        batch.append(t)
        meta.append((k, s, False))
        if k == "code" and s == "train":
            for pre, suf, mid in fim_examples(t, rng, sp, max(1, int(len(t) / 1000 * fim_rate))):
                batch.extend([pre, suf, mid])
                meta.extend([("fim_pre", s, True), ("fim_suf", s, True), ("fim_mid", s, True)])
        if len(batch) >= 2048:
            flush_fim_aware(streams, batch, meta, tok)
    flush_fim_aware(streams, batch, meta, tok)
    # assemble token streams: <|endoftext|><|kind|> text ... per document
    arrays = {}
    for s, kinds in streams.items():
        for k, encs in kinds.items():
            parts = []
            for e in encs:
                if k == "fim":
                    pre, suf, mid = e
                    parts.append([eot, sp["<|code|>"], sp["<|fim_prefix|>"]] + pre[-320:] + [sp["<|fim_suffix|>"]] +
                                 suf[:120] + [sp["<|fim_middle|>"]] + mid[:64] + [eot])
                else:
                    parts.append([eot, sp[f"<|{GROUP_TOKEN.get(k, k)}|>"]] + e)
            arrays[(s, k)] = np.concatenate([np.array(p, dtype=np.int32) for p in parts]) if parts else \
                np.zeros(0, dtype=np.int32)
    return tok, sp, arrays, nbytes


def flush_fim_aware(streams, batch, meta, tok):
    if not batch:
        return
    encs = tok.encode_batch(batch)
    pending = []
    for (kind, split, is_fim), enc in zip(meta, encs):
        if is_fim:
            pending.append(enc.ids)
            if len(pending) == 3:
                streams[split]["fim"].append(tuple(pending))
                pending = []
        else:
            streams[split][kind].append(enc.ids)
    batch.clear()
    meta.clear()


# ---- training ------------------------------------------------------------------------------------

def train_model(data_dir, tok_dir, out_dir):
    import numpy as np
    import torch
    import torch.nn.functional as F
    tc = CFG["train"]
    rng = random.Random(tc["seed"])
    torch.manual_seed(tc["seed"])
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    t0 = time.time()
    tok, sp, arrays, nbytes = tokenize_all(data_dir, tok_dir, rng)
    log(f"tokenized in {time.time() - t0:.1f} s")
    for (s, k), a in sorted(arrays.items()):
        log(f"  {s:5s} {k:5s} {len(a) / 1e6:8.3f} Mtok" + (f"  {nbytes[s][k] / max(1, len(a)):.2f} bytes/token" if k in nbytes[s] else ""))
    T = tc["seq_len"] if not SMOKE else 64
    B = tc["batch"] if not SMOKE else 4
    mix = {k: v for k, v in tc["mix"].items() if len(arrays[("train", k)]) > T + 1}
    kinds, weights = list(mix), [mix[k] for k in mix]
    train_t = {k: torch.from_numpy(arrays[("train", k)].astype(np.int64)) for k in kinds}

    def get_batch():
        ks = rng.choices(kinds, weights, k=B)
        rows = []
        for k in ks:
            a = train_t[k]
            o = rng.randrange(0, len(a) - T - 1)
            rows.append(a[o:o + T + 1])
        x = torch.stack(rows).to(dev, non_blocking=True)
        return x[:, :-1], x[:, 1:]

    if SMOKE:
        CFG["model"].update(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                            num_key_value_heads=2, head_dim=16)
    model = build_model(torch).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model parameters {n_params / 1e6:.2f} M")
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": tc["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}], lr=tc["lr"], betas=tuple(tc["betas"]),
                            **({"fused": True} if dev == "cuda" else {}))
    step_fn = model
    if dev == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    if dev == "cuda" and os.environ.get("LAYA_COMPILE", "1") == "1":
        try:
            step_fn = torch.compile(model)
        except Exception as e:  # noqa: BLE001 - eager is the fallback
            log("torch.compile unavailable:", e)

    def loss_of(m, x, y):
        with torch.autocast(device_type=dev, dtype=torch.bfloat16, enabled=(dev == "cuda")):
            logits = m(x)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), y.reshape(-1))

    @torch.no_grad()
    def evaluate(split, max_tokens):
        model.eval()
        res = {}
        for k in GROUPS:
            a = arrays[(split, k)]
            n = min(len(a) - 1, max_tokens) // T * T
            if n <= 0:
                continue
            tot = 0.0
            for i in range(0, n, T * 32):
                xs = torch.from_numpy(a[i:min(n, i + T * 32) + 1].astype(np.int64))
                m = (len(xs) - 1) // T
                x = xs[:m * T].view(m, T).to(dev)
                y = xs[1:m * T + 1].view(m, T).to(dev)
                tot += loss_of(model, x, y).item() * m * T
            res[k] = tot / n
        model.train()
        return res

    max_steps = tc["max_steps"] if not SMOKE else 30
    budget = float(os.environ.get("LAYA_TRAIN_SECONDS", tc["time_budget_s"])) if not SMOKE else 1e9
    hist, best, best_state = [], float("inf"), None
    t_start, step = time.time(), 0
    while step < max_steps:
        if step == 40 and not SMOKE:
            per = (time.time() - t_warm) / 30
            max_steps = min(max_steps, int(40 + (budget - (time.time() - t_start)) / per))
            log(f"{per * 1000:.1f} ms/step, {B * T / per / 1e6:.2f} Mtok/s -> {max_steps} steps")
        if step == 10:
            t_warm = time.time()
        lr = tc["lr"] * min(1.0, (step + 1) / tc["warmup_steps"])
        if step >= tc["warmup_steps"]:
            prog = (step - tc["warmup_steps"]) / max(1, max_steps - tc["warmup_steps"])
            lr = tc["lr"] * (tc["min_lr_frac"] + (1 - tc["min_lr_frac"]) * 0.5 * (1 + math.cos(math.pi * min(1.0, prog))))
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch()
        if step == 0 and step_fn is not model:
            try:  # torch.compile fails at the first call, not at torch.compile(): eager is the fallback
                loss = loss_of(step_fn, x, y)
            except Exception as e:  # noqa: BLE001
                log("torch.compile failed, training eagerly:", str(e).splitlines()[0][:200])
                step_fn = model
                loss = loss_of(step_fn, x, y)
        else:
            loss = loss_of(step_fn, x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), tc["grad_clip"])
        opt.step()
        step += 1
        if step % 25 == 0 or step == 1:
            hist.append({"step": step, "tokens": step * B * T, "train_loss": round(loss.item(), 4),
                         "lr": lr, "t": round(time.time() - t_start, 1)})
        if step % tc["eval_every"] == 0 or step == max_steps:
            v = evaluate("valid", 400_000 if not SMOKE else 5000)
            vm = sum(v.values()) / len(v)
            hist[-1]["valid"] = {k: round(x, 4) for k, x in v.items()}
            log(f"step {step} loss {loss.item():.4f} valid {hist[-1]['valid']} lr {lr:.2e} "
                f"{time.time() - t_start:.0f} s")
            if vm < best:
                best, best_state = vm, {n: p.detach().clone() for n, p in model.state_dict().items()}
    log(f"trained {step} steps, {step * B * T / 1e6:.1f} M tokens in {time.time() - t_start:.0f} s")
    model.load_state_dict(best_state)
    # bits per byte on the held-out test split (scored windows of T tokens, no overlap)
    test = evaluate("test", 3_000_000 if not SMOKE else 5000)
    bpb = {}
    for k, nll in test.items():
        a = arrays[("test", k)]
        n = min(len(a) - 1, 3_000_000 if not SMOKE else 5000) // T * T
        bytes_per_tok = nbytes["test"][k] / max(1, len(a))
        bpb[k] = round(nll / math.log(2) / bytes_per_tok, 4)
    log("test nats/token", {k: round(v, 4) for k, v in test.items()}, "bits/byte", bpb)
    os.makedirs(out_dir, exist_ok=True)
    mc = CFG["model"]
    json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
               "hidden_size": mc["hidden_size"], "intermediate_size": mc["intermediate_size"],
               "num_hidden_layers": mc["num_hidden_layers"], "num_attention_heads": mc["num_attention_heads"],
               "num_key_value_heads": mc["num_key_value_heads"], "head_dim": mc["head_dim"],
               "max_position_embeddings": mc["max_position_embeddings"], "rms_norm_eps": mc["rms_norm_eps"],
               "rope_theta": mc["rope_theta"], "vocab_size": mc["vocab_size"], "tie_word_embeddings": True,
               "bos_token_id": sp["<|endoftext|>"], "eos_token_id": sp["<|endoftext|>"],
               "torch_dtype": "float16", "attention_bias": False, "mlp_bias": False},
              open(os.path.join(out_dir, "config.json"), "w"), indent=1)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        with open(os.path.join(tok_dir, f), "rb") as a, open(os.path.join(out_dir, f), "wb") as b:
            b.write(a.read())
    write_safetensors_shards(hf_state(model), out_dir)
    json.dump({"params": n_params, "steps": step, "tokens_seen": step * B * T, "history": hist,
               "test_nats_per_token": test, "test_bits_per_byte": bpb,
               "train_tokens": {k: int(len(arrays[("train", k)])) for k in GROUPS + ["fim"]},
               "train_seconds": round(time.time() - t_start, 1)},
              open(os.path.join(out_dir, "train_log.json"), "w"), indent=1)
    return model, tok


def check_with_transformers(model_dir, tok_dir):
    """Reload the exported directory with transformers and compare its logits to the trained model."""
    try:
        import torch
        from transformers import LlamaForCausalLM
    except ImportError:
        log("transformers not available; export check skipped")
        return
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(tok_dir, "tokenizer.json"))
    m = LlamaForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32).eval()
    prompts = ["<|endoftext|><|prose|>The quick brown fox jumps over the", "<|endoftext|><|code|>int main(int argc, char **argv)\n{\n\t",
               "<|endoftext|><|shell|>$ git commit -", "<|endoftext|><|zh|>我们的系统"]
    out = []
    for p in prompts:
        ids = tok.encode(p).ids
        with torch.no_grad():
            lg = m(torch.tensor([ids])).logits[0].float()
        top = lg[-1].topk(5)
        out.append({"prompt": p, "ids": ids, "last_logits_top5": [[int(i), float(v)] for v, i in zip(top.values, top.indices)],
                    "greedy": tok.decode(greedy(m, ids, 12, torch))})
        log("transformers:", json.dumps(out[-1], ensure_ascii=False))
    json.dump(out, open(os.path.join(model_dir, "reference.json"), "w"), indent=1, ensure_ascii=False)


def greedy(m, ids, n, torch):
    ids = list(ids)
    for _ in range(n):
        with torch.no_grad():
            ids.append(int(m(torch.tensor([ids])).logits[0, -1].argmax()))
    return ids


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "tokenizer":
        train_tokenizer(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 5 and sys.argv[1] == "train":
        train_model(sys.argv[2], sys.argv[3], sys.argv[4])
        check_with_transformers(sys.argv[4], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
