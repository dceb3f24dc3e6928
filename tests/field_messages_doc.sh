#!/usr/bin/env bash
# docs/field-messages.md is generated from the message catalogue
# (hangdx/ingest/messages/data/*.msgs) by `hangdx messages --markdown`: this
# test (ctest field_messages_doc) fails when the committed file is out of date.
set -euo pipefail
cd "$(dirname "$0")/.."
HANGDX_BIN=${HANGDX_BIN:-build/bin/hangdx}
if ! diff -u docs/field-messages.md <("$HANGDX_BIN" messages --markdown) > /tmp/field-messages.$$.diff; then
  head -40 /tmp/field-messages.$$.diff
  rm -f /tmp/field-messages.$$.diff
  echo "FAIL docs/field-messages.md is out of date: run $HANGDX_BIN messages --markdown > docs/field-messages.md"
  exit 1
fi
rm -f /tmp/field-messages.$$.diff
echo "ok   docs/field-messages.md matches the catalogue"
