# Medians of gridbench's JSON lines (bench/collectives.sh, bench/node_level.sh): one line per
# (op, algo, bytes) with the median of max_us (the call complete on every process) over the
# runs, wan_msgs and bound_us (the same in every run), the median's multiple of the bound,
# and, for rows of an algo other than `base` (awk -v base=...), base's median / this one's.
BEGIN { FS = "[,:{}\"]+" }
{ for (i = 2; i < NF; i += 2) v[$i] = $(i + 1)
  k = v["op"] " " v["algo"] " " v["bytes"]; n[k]++; t[k, n[k]] = v["max_us"]
  msgs[k] = v["wan_msgs"]; bound[k] = v["bound_us"]; if (!(k in seen)) { order[++m] = k; seen[k] = 1 } }
function median(k,   i, j, x, c) { c = n[k]; for (i = 1; i <= c; i++) a[i] = t[k, i]
  for (i = 2; i <= c; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
  return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2 }
END {
  printf "%-10s %-6s %7s %13s %9s %10s %9s %10s\n", "op", "algo", "bytes", "median_max_us", "wan_msgs", "bound_us", "x bound", base "/this"
  for (i = 1; i <= m; i++) { k = order[i]; med[k] = median(k) }
  for (i = 1; i <= m; i++) { k = order[i]; split(k, f, " ")
    ratio = ""; if (f[2] != base) { bk = f[1] " " base " " f[3]; if (bk in med && med[k] > 0) ratio = sprintf("%.2f", med[bk] / med[k]) }
    printf "%-10s %-6s %7s %13.1f %9s %10s %9.2f %10s\n", f[1], f[2], f[3], med[k], msgs[k], bound[k], (bound[k] > 0 ? med[k] / bound[k] : 0), ratio }
}
