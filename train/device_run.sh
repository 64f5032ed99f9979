#!/bin/sh
# One GPU call: tokenizer, model, transformers check, export to GGUF with Laya's own converter.
# Run from the repository root on the device machine, with the corpus part(s) in .dev/corpus and a
# known-good copy of Laya's sources in .dev/laya-src (see train/README.md). Files come back in $OUT.
set -e
: "${OUT:?}"
python3 train/train.py tokenizer .dev/corpus .dev/tok 2>&1 | tee $OUT/train_stdout.txt
cp .dev/tok/tokenizer.json $OUT/
python3 train/train.py train .dev/corpus .dev/tok .dev/model 2>&1 | grep -v Warning | tee -a $OUT/train_stdout.txt
make -C .dev/laya-src -j16 build/laya > /dev/null 2>&1
.dev/laya-src/build/laya convert .dev/model .dev/laya-typing-q8_0.gguf --type Q8_0 | tee -a $OUT/train_stdout.txt
split -b 15000000 .dev/laya-typing-q8_0.gguf $OUT/q8.part.
tar -C .dev/model -cf $OUT/meta.tar config.json tokenizer.json tokenizer_config.json train_log.json \
    model.safetensors.index.json $(cd .dev/model && ls reference.json 2>/dev/null)
ls -la $OUT
