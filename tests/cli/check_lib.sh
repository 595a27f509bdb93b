# Sourced by the CLI test scripts: pass/fail counting and JSON field reads.
#   ok MSG / fail MSG      count and print one result line
#   json FILE EXPR         print EXPR evaluated with j = the parsed FILE
#   finish                 print the totals; status 0 only without failures
fails=0; passes=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; passes=$((passes + 1)); }
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }
finish() { echo "$passes passed, $fails failed"; [ "$fails" -eq 0 ]; }
