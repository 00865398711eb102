#!/usr/bin/env bash
# The main job for now: build a tiny model (once), start the reference engine on it, talk to it through
# its OpenAI-compatible endpoint, and keep it serving until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL_DIR="${OPENCLAW_MODEL_DIR:-data/tiny-model}"
PORT="${OPENCLAW_ENGINE_PORT:-30000}"
HOST="${OPENCLAW_ENGINE_HOST:-127.0.0.1}"
PY=.venv/bin/python

if [ ! -x "$PY" ]; then
  echo "No .venv yet: running scripts/setup.sh first"
  bash scripts/setup.sh
fi

if [ ! -f "$MODEL_DIR/config.json" ]; then
  echo "== building a tiny random model in $MODEL_DIR"
  "$PY" -m openclaw_engine make-tiny-model "$MODEL_DIR"
fi

LOG=$(mktemp)
"$PY" -m openclaw_engine serve --model "$MODEL_DIR" --host "$HOST" --port "$PORT" --trainer >"$LOG" 2>&1 &
ENGINE_PID=$!
trap 'kill $ENGINE_PID 2>/dev/null || true; rm -f "$LOG"' EXIT INT TERM

for _ in $(seq 1 300); do
  if grep -q '^ready ' "$LOG"; then break; fi
  if ! kill -0 "$ENGINE_PID" 2>/dev/null; then cat "$LOG"; echo "engine exited"; exit 1; fi
  sleep 0.2
done
URL=$(grep -m1 '^ready ' "$LOG" | awk '{print $2}')
echo "== engine $(grep -m1 '^ready ' "$LOG")"

echo "== POST $URL/v1/chat/completions"
curl -sS "$URL/v1/chat/completions" -H 'content-type: application/json' -d '{
  "model": "tiny",
  "messages": [{"role": "user", "content": "Hello! Who are you?"}],
  "max_tokens": 24, "temperature": 1.0, "seed": 7, "logprobs": true,
  "return_prompt_token_ids": true, "return_token_ids": true
}' | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
c = r["choices"][0]
print("reply (a tiny random model speaks gibberish):", repr(c["message"]["content"]))
print("finish_reason:", c["finish_reason"], "| prompt tokens:", len(c.get("prompt_token_ids") or []),
      "| sampled tokens:", len(c.get("token_ids") or []))
lps = [round(t["logprob"], 3) for t in (c.get("logprobs") or {}).get("content", [])][:8]
print("first sampled-token log-probs:", lps)
'
echo "== the engine keeps serving at $URL (Ctrl-C to stop); try: curl $URL/get_model_info"
tail -f "$LOG" &
wait "$ENGINE_PID"
