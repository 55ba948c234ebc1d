#!/bin/sh
# Rendered by tqdeploy 0.1.0 from spec tiny-cpu-demo (sha256 675a31358f523a7dfcd373efec9fad3f88825c38626cc421ed7ec24366f9246f).
# Container health: vLLM answers GET /health with 200 when ready and 503 when its engine died.
# Uses whichever HTTP client the image has (curl, python3, busybox wget).
set -eu
url="http://127.0.0.1:8000/health"
if command -v curl >/dev/null 2>&1; then
  exec curl -fsS -o /dev/null --max-time 5 "$url"
fi
if command -v python3 >/dev/null 2>&1; then
  exec python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' "$url"
fi
# No -T: busybox 1.35's static wget crashes with it (SIGSEGV, seen here); HEALTHCHECK --timeout bounds it.
exec wget -q -O /dev/null "$url"
