#!/usr/bin/env bash
# The plans of what pgstac runs for each query kind of benches/pgstac-scale.sh (issue 35):
#   KEEP=1 benches/pgstac-scale.sh 1000000 200      # keeps the cluster, prints where
#   benches/pgstac-explain.sh "$(grep ^PGSTAC_DSN= /tmp/pgstac-scale.XXXX/pg/env | cut -d= -f2-)"
# For each kind: the WHERE clause pgstac makes of the search (stac_search_to_where), then
# EXPLAIN (ANALYZE, BUFFERS) of the page toolgate asks for (item-id order, the cap and one more,
# plus pgstac's one more to know of a next page) and of the exact count pgstac's `context: auto`
# runs when the planner expects fewer than 20,000 matches (toolgate's threshold; above it the
# count is the plan's estimate and nothing runs). Run twice: the second shows warm caches.
set -euo pipefail
DSN="${1:?usage: pgstac-explain.sh PGSTAC_DSN}"

kinds=(
  'text|{"collections":["debrief"],"filter-lang":"cql2-json","filter":{"op":"like","args":[{"property":"debrief:search_text"},"%w123%"]}}'
  'platform|{"collections":["debrief"],"filter-lang":"cql2-json","filter":{"op":"like","args":[{"property":"debrief:platform_text"},"%hms w123%"]}}'
  'time|{"collections":["debrief"],"datetime":"2010-03-01T00:00:00Z/2010-03-08T00:00:00Z"}'
  'bbox|{"collections":["debrief"],"bbox":[-10,50,-8,52]}'
  'text+time+bbox|{"collections":["debrief"],"bbox":[-20,40,0,60],"datetime":"2010-03-01T00:00:00Z/2011-03-01T00:00:00Z","filter-lang":"cql2-json","filter":{"op":"like","args":[{"property":"debrief:search_text"},"%w123%"]}}'
)

for k in "${kinds[@]}"; do
  name="${k%%|*}"
  body="${k#*|}"
  where="$(psql "$DSN" -qAt -v body="$body" <<'SQL'
SET search_path TO pgstac, public;
SELECT stac_search_to_where(:'body'::jsonb);
SQL
)"
  echo "### $name"
  echo
  echo "search: \`$body\`"
  echo
  echo '```'
  psql "$DSN" -qAt <<SQL
SET search_path TO pgstac, public;
EXPLAIN (ANALYZE, BUFFERS)
SELECT * FROM items WHERE $where ORDER BY id ASC, collection ASC LIMIT 52;
SELECT '-- the count';
EXPLAIN (ANALYZE, BUFFERS)
SELECT count(*) FROM items WHERE $where;
SQL
  echo '```'
  echo
done
