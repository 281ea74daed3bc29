# Medians of one-line JSON objects (bench/queue.sh): rows grouped by the fields named in
# `keys`, and for each field named in `values` the median over the group's lines.
#   awk -v keys=mode,workers_only -v values=makespan_ms,phase2_ms -f bench/json_medians.awk FILE
BEGIN { FS = "[,:{}\"]+"; nk = split(keys, K, ","); nv = split(values, V, ",") }
/^\{/ { delete f; for (i = 2; i < NF; i += 2) f[$i] = $(i + 1)
  k = ""; for (i = 1; i <= nk; i++) k = k (i > 1 ? " " : "") f[K[i]]
  if (!(k in n)) order[++m] = k
  n[k]++; for (j = 1; j <= nv; j++) x[k, j, n[k]] = f[V[j]] }
function median(k, j,   i, l, y, c) { c = n[k]; for (i = 1; i <= c; i++) a[i] = x[k, j, i] + 0
  for (i = 2; i <= c; i++) { y = a[i]; for (l = i - 1; l >= 1 && a[l] > y; l--) a[l + 1] = a[l]; a[l + 1] = y }
  return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2 }
END {
  for (i = 1; i <= nk; i++) printf "%-14s", K[i]; printf "%5s", "runs"
  for (j = 1; j <= nv; j++) printf " %16s", "median " V[j]; printf "\n"
  for (o = 1; o <= m; o++) { k = order[o]; c = split(k, kk, " ")
    for (i = 1; i <= nk; i++) printf "%-14s", kk[i]; printf "%5d", n[k]
    for (j = 1; j <= nv; j++) printf " %16.4g", median(k, j); printf "\n" }
}
