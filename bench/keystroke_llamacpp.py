#!/usr/bin/python3
"""Per-keystroke latency of llama.cpp's server, for the side-by-side in docs/EVALUATION.md.

Starts $LLAMA_SERVER (a llama-server built outside this repository from llama.cpp's public source) on the
model with 2 threads, then types the first N characters of TEXT one keystroke at a time: after each
keystroke it asks the server for what issue 5 calls the smaller job (3 tokens, the 5 most likely tokens at
each, greedy, the prompt cache on, no healing) and times the HTTP round trip as a client sees it.

Usage: LLAMA_SERVER=/path/llama-server bench/keystroke_llamacpp.py MODEL TEXT [--chars 2000] [--port 8089]
Prints one JSON line: {"keystrokes":n,"latency_ms":{"p50":..,"p95":..,"p99":..,"max":..}}"""
import argparse, json, os, subprocess, sys, time, urllib.request

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("text")
    ap.add_argument("--chars", type=int, default=2000)
    ap.add_argument("--port", type=int, default=8089)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    server = os.environ.get("LLAMA_SERVER")
    if not server:
        sys.exit("set LLAMA_SERVER to a llama-server binary")
    text = open(a.text, encoding="utf-8").read()[: a.chars]
    proc = subprocess.Popen([server, "-m", a.model, "-t", str(a.threads), "-tb", str(a.threads), "-c", "1024",
                             "-np", "1", "--port", str(a.port), "--no-webui"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{a.port}"
    try:
        for _ in range(600):
            try:
                if urllib.request.urlopen(url + "/health", timeout=1).status == 200:
                    break
            except Exception:
                time.sleep(0.1)
        else:
            sys.exit("the server did not come up")
        lat = []
        for i in range(1, len(text) + 1):
            body = json.dumps({"prompt": text[:i], "n_predict": 3, "n_probs": 5, "temperature": 0,
                               "cache_prompt": True}).encode()
            req = urllib.request.Request(url + "/completion", data=body,
                                         headers={"Content-Type": "application/json"})
            t0 = time.perf_counter()
            with urllib.request.urlopen(req, timeout=60) as r:
                r.read()
            lat.append((time.perf_counter() - t0) * 1000)
        lat.sort()
        pct = lambda q: lat[int(q * (len(lat) - 1) + 0.5)]
        print(json.dumps({"keystrokes": len(lat), "latency_ms": {"p50": round(pct(0.5), 3), "p95": round(pct(0.95), 3),
                                                                  "p99": round(pct(0.99), 3), "max": round(lat[-1], 3)}}))
    finally:
        proc.terminate()
        proc.wait()

if __name__ == "__main__":
    main()
