#!/usr/bin/env bash
# Checks the history a soak run left in DIR (tests/soak/soak.sh) and prints a summary.
#
#   tests/soak/check.sh DIR        (CHECK_SHOW=N: print up to N violations per rule, default 25)
#
# Exit 0 PASS, 1 FAIL (one "VIOLATION" line per finding), 2 DIR is not a soak history.
# Needs only bash, coreutils and awk (mawk or gawk). Quorum fences are server times (13
# digits): mawk prints such a number with %d as 2147483647 and turns it into text as
# 1.7956e+12, so fences are compared as numbers and printed with %.0f.
#
# Inputs (see soak.sh, contender.sh, cs.sh): DIR/meta (key=value), DIR/hist/C (E, L and R
# lines of contender C), DIR/res/log (W lines, in the resource's decision order),
# DIR/faults.log (F lines), DIR/err/C (rlock's stderr, each run after "== RUN"), DIR/sups
# if there (TOKEN MS lines: the first join of every superseding job).
#
# Definitions (all times are the machine's wall clock in µs, one clock for every process):
# - A run is inside from its E (enter) to its L (leave); without an L (killed), to the end
#   of its rlock process.
# - Two runs overlap when their inside intervals intersect.
# - Run X is superseded when a run Y with a higher fence entered before X left: Y was
#   granted the lock after X (fences grow with every grant), while X was (or was about to
#   be) inside, so X ran on without the lock. Every overlap makes its lower-fence run
#   superseded; a run that enters after a higher fence already did is superseded without
#   overlapping.
# - A superseded run X (first superseded by Y) is explained by
#     stop:  a `stop` fault of X's job that started before Y entered, Y entered within
#            grace_ms (meta, 1s) after X's rlock ran again and X was out within grace_ms
#            after its whole job ran again: the freeze outlived the lease, which is exactly
#            what fencing is for (a `stop_waiter` fault counts the same for a superseding
#            job granted just before it froze it waiting). The freeze counted is the real one: the soak polls the
#            frozen processes and logs when each ran again (frozen_ms for rlock,
#            cs_frozen_ms for the critical section; without them, the fault's end);
#            frozen_min_ms, the last time rlock was seen stopped, is how long it surely
#            was frozen (a run ending 0 must not have been frozen past its TTL);
#     break: an `rlock break` that removed a holder, started before Y entered, ended after
#            X's rlock started, with X's fence between the fence counter just before the
#            break and just after it, and X out within break_grace_ms (meta, 2s: "about a
#            second" for the holder to hear it, plus grace) after the break, not counting
#            the time a `stop` fault froze X's job meanwhile.
#   Nothing else explains one: a cut, CLIENT KILL, SCRIPT FLUSH or a restart of a server
#   with appendfsync always must not let two holders in; in quorum mode (meta masters=N,
#   soak.sh --masters N) neither must any of these on one master, nor a SIGSTOP of one
#   master (master_stop). A restart's snapshots are then of the master it restarted.
# - Sentinel and Cluster (meta topology=sentinel|cluster): a superseded run, a fence
#   granted twice, and a write refused to a run that exited 0 are EXPLAINED (counted
#   apart, not a violation) when an unplanned failover lost a grant, which is what
#   docs/GUIDE.md says asynchronous replication does ("When the lock can still be given twice"):
#     failover: a `master_kill` (kill -9 of the master) at K, the earlier of the two runs
#            A (the one that entered first) started before K and entered at most its TTL
#            + grace_ms before K (a grant within its lease of the kill), the later one B
#            entered after K, and A was out by K + its TTL + grace_ms (it cannot renew on
#            a dead master: it must lose its lease by then).
#     planned: a Sentinel `failover` (SENTINEL FAILOVER) issued at S whose sentinels had
#            all named the new master at N (its end; details named_ms): the promoted
#            replica takes writes from before N while the old master still does, so a grant
#            made there between S and N may be lost with it (rlock takes no grant the
#            sentinels, asked after it, no longer confirm; a grant before they switch is
#            the same unreplicated grant as above). A renewal made there is lost the same
#            way: the new master has the lease of the holder's last replicated renewal,
#            which may end before the holder learns of the switch. Which of the two was
#            granted or renewed on the old master is not in the history, so either may
#            be: that one (O) was inside at some time from S to planned_grace_ms (meta,
#            300ms: the sentinels' answer and the command's start after the grant) after
#            N (it entered by then and left after S) and was out by N + its TTL +
#            grace_ms, and the other entered after S. A run that entered later than
#            N + planned_grace_ms is never O: a grant on the old master after the
#            sentinels all named the new one stays a FAILURE.
#   A Cluster planned failover (CLUSTER FAILOVER without FORCE), a Sentinel one logged
#   without named_ms, and a slot migration (`migrate`) explain nothing, and with meta
#   sync_replicas = replicas (soak.sh --sync-replicas covering every replica) no failover
#   explains anything.
#
# Rules; each broken one is a VIOLATION and makes the verdict FAIL:
#   (a) resource: replaying DIR/res/log, each decision is "accept iff the fence is above
#       every accepted one", so accepted fences strictly increase; no flock timeout.
#   (b) overlap: every superseded run (and so every overlap) is explained; no fence is
#       granted twice; across a restart the fence counter never goes back, and a lock whose
#       holder was still inside and whose PTTL had not run out is still there.
#   (c) status: every run ends 0, 69, 75 or 76, 80 for a superseding job that was
#       superseded (--superseded-exit-code 80; any other run never), 77 while an `acl` fault
#       took a command from the soak user (or within grace_ms after), or 128+N (HUP, INT,
#       QUIT, TERM) once the soak is stopping; a run that ran its command did not end 69, 75
#       or 80, one that did
#       not run it did not end 0 or 76 (76 is allowed for a nested run: its outer hold was
#       lost before its command's first line, so it lost its lease too). A run ending 0 must not have lost the lock: not
#       superseded, its rlock not frozen past its TTL, not broken while inside, write not rejected,
#       command not ended by a signal ("a loss is never hidden": such runs exit 76).
#   break: a run whose lock `rlock break` removed while it was inside is out within
#       break_grace_ms of the break (the man page, break: a holder hears it "within about a
#       second").
#   release: a failed release (rlock: "could not release") away from any restart,
#       failover or acl fault (a release the ACL refuses is 77, the lease then expiring by
#       itself): it is retried on a new connection first (man page, --command-timeout).
#   shutdown: the lock is free after the soak, a newcomer gets in with `run -n` (no dead
#       waiter blocks it; asked for 10s, as a waiter that could not leave keeps its place
#       for its 6s place lease), no key of the lock but its fence counter and history is left
#       without an expiry, and no process is left behind.
#   supersede: superseding jobs (`run --supersede`, DIR/sups: the first join of each, by
#       token) entered in the order they joined: an older one never runs after a newer
#       one entered ("latest wins", docs/GUIDE.md).
#   target: the soak reached its number of acquisitions (of the soak key) before --max-time.
#   shapes (contender.sh, SHAPES; meta key, pool_key, pool_n, done_key, done_ms):
#     shared holders of the soak key may be inside together: a shared run is superseded
#       only by a later exclusive grant, and an overlap with an exclusive one is (b) as
#       any other;
#     pool: the pool's runs (their own key) never more than pool_n inside at once, never
#       one RLOCK_SLOT to two live holders, each slot in 1..pool_n; a clash explained as an
#       overlap is (a freeze, a failover; a restart without persistence, for this key);
#     done-for: the once-per-period key's runs one at a time (overlap, fences per key), and
#       nobody enters it within done_ms of the leave of a run that ended 0 unless a freeze
#       of that run, a failover or a restart without persistence explains it.
#   status, oom: 70 while an `oom` fault held (or within grace_ms after) is counted apart,
#       as 77 is for the acl fault (rlock reports Redis's OOM refusal as 70).
set -uo pipefail

W=${1:-}
if [[ -z $W || ! -f $W/meta || ! -d $W/hist || ! -f $W/res/log || ! -f $W/faults.log ]]; then
  echo "usage: check.sh DIR   (DIR: a history left by tests/soak/soak.sh)" >&2
  exit 2
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlock-check.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

hist=("$W"/hist/*)
errs=("$W"/err/[0-9]*)

# Pass 1: one line per run, joined from its E, L and R lines:
#   RUN ENTER LEAVE HOW FENCE TOKEN START END STATUS TTL WAIT VIA WORK STDERR SHAPE HOW_NESTED
#       KEY SLOT
#   ("-": none; SHAPE "nested" for a run whose critical section ran in a nested run,
#   HOW_NESTED setm, setsid, whilepid or group: contender.sh; KEY and SLOT as the critical
#   section saw them, RLOCK_KEY and RLOCK_SLOT)
cat "${hist[@]}" | awk '
  $1 == "E" { seen[$2] = 1; en[$2] = $3; fe[$2] = $4; tok[$2] = $7; ky[$2] = (NF >= 8 ? $8 : "-"); sl[$2] = (NF >= 10 ? $10 : "-") }
  $1 == "L" { seen[$2] = 1; if (!($2 in lv)) { lv[$2] = $3; how[$2] = $4 } }
  $1 == "R" { seen[$2] = 1; r[$2] = $3 " " $4 " " $5 " " $6 " " $7 " " $8 " " $9 " " (NF >= 10 ? $10 : "file") " " (NF >= 11 ? $11 : "-") " " (NF >= 12 ? $12 : "-") }
  function d(a, k) { return (k in a) ? a[k] : "-" }
  END {
    for (k in seen)
      print k, d(en, k), d(lv, k), d(how, k), d(fe, k), d(tok, k), ((k in r) ? r[k] : "- - - - - - - - - -"), d(ky, k), d(sl, k)
  }' | sort -k2,2n -k1,1 >"$tmp/runs"

# DIR/sups: the first join (server ms) of every superseding job, by token (soak.sh
# --supersede); none in a history without superseding jobs.
supsf=$W/sups
[[ -f $supsf ]] || { supsf=$tmp/sups && : >"$supsf"; }
awk -v show="${CHECK_SHOW:-25}" -v metaf="$W/meta" -v faultf="$W/faults.log" -v resf="$W/res/log" -v runsf="$tmp/runs" \
  -v supsf="$supsf" -v errlist="${errs[*]}" -f - "$W/meta" "$W/faults.log" "$W/res/log" "$supsf" "$tmp/runs" <<'AWK'
BEGIN { max = 0; OTHER["pool"] = 2e7; OTHER["done"] = 3e7; OTHER["npool"] = 4e7; OTHER["plain"] = 5e7; OTHER["redisson"] = 6e7; ISSTOP["stop"] = 1; ISSTOP["stop_waiter"] = 1 }
function sec(t) { return sprintf("%.3fs", (t - T0) / 1e6) }
function ms(d) { return sprintf("%.0fms", d / 1000) }
function viol(rule, msg, run) {
  nv++; VR[nv] = rule; VM[nv] = msg; VRUN[nv] = run; NVR[rule]++
}
function sig(s) {
  if (s == 134) return " (SIGABRT: rlock crashed)"
  if (s == 139) return " (SIGSEGV: rlock crashed)"
  if (s == 137) return " (SIGKILL)"
  if (s > 128 && s < 160) return " (signal " (s - 128) ")"
  if (s == 70) return " (internal or protocol error)"
  if (s == 64) return " (usage error)"
  if (s == 77) return " (permission)"
  if (s == 1) return " (not a documented rlock outcome here: the command always exits 0)"
  return ""
}
# " k:v" for every key of arr, keys in numeric (or the given) order
function counts(arr, order,    keys, nk, i, j, t, out) {
  nk = 0
  if (order != "") nk = split(order, keys, " ")
  else {
    for (t in arr) keys[++nk] = t
    for (i = 2; i <= nk; i++) { t = keys[i]; for (j = i - 1; j >= 1 && keys[j] + 0 > t + 0; j--) keys[j + 1] = keys[j]; keys[j + 1] = t }
  }
  out = ""
  for (i = 1; i <= nk; i++) if (arr[keys[i]] + 0 > 0) out = out sprintf(" %s:%d", keys[i], arr[keys[i]])
  return out
}
function leave_of(i) { return LV[i] != "-" ? LV[i] + 0 : (ND[i] != "-" ? ND[i] + 0 : TEND) }
function add(list, s) { return list == "" ? s : list "; " s }
# when stop fault k's freeze of rlock (the process that renews the lease) had ended: by
# frozen_ms (the soak polled its state: something else may have continued it early, the
# kernel for an orphaned group), else the fault's end (a history without frozen_ms)
function thaw(k) { return FKV[k, "frozen_ms"] != "" ? FS0[k] + FKV[k, "frozen_ms"] * 1000 : FE[k] }
# when the whole job ran again: rlock and the critical section (cs_frozen_ms)
function thaw_job(k,    c) {
  c = FKV[k, "cs_frozen_ms"] != "" ? FS0[k] + FKV[k, "cs_frozen_ms"] * 1000 : FE[k]
  return c > thaw(k) ? c : thaw(k)
}
# how long rlock surely stayed frozen (ms): the last time it was seen stopped
function frozen_min(k) { return FKV[k, "frozen_min_ms"] != "" ? FKV[k, "frozen_min_ms"] + 0 : FKV[k, "stop_ms"] + 0 }
# how long run i was frozen by `stop` faults within [a, b] (µs)
function frozen_within(i, a, b,    k, f, lo, hi) {
  f = 0
  for (k = 1; k <= nf; k++) {
    if (!ISSTOP[FK[k]] || FKV[k, "run"] != RUN[i]) continue
    lo = FS0[k] > a ? FS0[k] : a; hi = thaw_job(k) < b ? thaw_job(k) : b
    if (hi > lo) f += hi - lo
  }
  return f
}
# "failover" when a master_kill explains that a (entered first) and b (entered later)
# were both granted: a's grant, made within its lease before the kill, was lost with the
# killed master (see the header); "" otherwise.
# planned: o's grant or a renewal of it on the old master fell in the window of failover
# k (o was inside at some time from its start to planned_grace_ms after every sentinel
# named the new master) and o was out by then + its TTL + grace_ms; n, granted on the
# new master, entered after the start
function in_window(o, n, k) {
  return ST[o] != "-" && leave_of(o) >= FS0[k] && EN[o] <= FE[k] + PGRACE && EN[n] > FS0[k] && \
    leave_of(o) <= FE[k] + TTL[o] * 1000 + GRACE
}
function explain_failover(a, b,    k, K, ttl) {
  if (!FAILOK || ST[a] == "-") return ""
  ttl = TTL[a] * 1000
  for (k = 1; k <= nf; k++) {
    if (FK[k] == "failover" && M["topology"] == "sentinel" && FKV[k, "planned"] == "1" && \
        FKV[k, "named_ms"] != "" && (in_window(a, b, k) || in_window(b, a, k)))
      return "failover"
    if (FK[k] != "master_kill") continue
    K = FS0[k]
    if (ST[a] + 0 < K && EN[a] >= K - ttl - GRACE && EN[b] > K && leave_of(a) <= K + ttl + GRACE)
      return "failover"
  }
  return ""
}
# The planned failover k that explains runs a and b (in_window) although both exited 0
# and both left after every sentinel named the new master (named_ms, + planned_grace_ms):
# the one whose hold it lost released after the sentinels had switched, so rlock asked the
# new master, which lacked it, and had to exit 76 (man page, EXIT STATUS; docs/PROTOCOL.md,
# "Sentinel"); "" when there is none.
function planned_silent(a, b,    k) {
  if (STAT[a] != "0" || STAT[b] != "0") return ""
  for (k = 1; k <= nf; k++)
    if (FK[k] == "failover" && M["topology"] == "sentinel" && FKV[k, "planned"] == "1" && \
        FKV[k, "named_ms"] != "" && (in_window(a, b, k) || in_window(b, a, k)) && \
        leave_of(a) > FE[k] + PGRACE && leave_of(b) > FE[k] + PGRACE)
      return k
  return ""
}
# why X (index i, superseded first by index j) ran without the lock, or "" if unexplained
function explain(i, j,    k, tY, lvX) {
  tY = EN[j]; lvX = leave_of(i)
  for (k = 1; k <= nf; k++) {
    if (ISSTOP[FK[k]] && FKV[k, "run"] == RUN[i] && FS0[k] < tY && tY <= thaw(k) + GRACE && \
        lvX <= thaw_job(k) + GRACE)
      return "stop"
    # a restart without persistence loses the other keys' holders too (the soak key's
    # are counted apart: fence resets)
    if (FK[k] == "restart" && CLS[i] != "" && M["persistence"] != "1" && FS0[k] < tY && FE[k] > EN[i])
      return "restart"
    # (a break of shared holders removes every one of them: the snapshot before it shows
    # the marker, tok=shared, and the counter, which may be above a shared holder's fence)
    if (FK[k] == "break" && CLS[i] == "" && FKV[k, "status"] == "0" && FS0[k] < tY && ST[i] != "-" && \
        ST[i] + 0 <= FE[k] && lvX - frozen_within(i, FE[k], lvX) <= FE[k] + BGRACE && \
        (FE_[i] >= FKV[k, "fence"] + 0 || (SHR[i] && FKV[k, "tok"] == "shared")) && \
        FE_[i] <= FKV[k, "fence1"] + 0)
      return "break"
  }
  return EN[i] < EN[j] ? explain_failover(i, j) : explain_failover(j, i)
}
# whether an `acl` fault (a command taken from the soak user) was on while run id ran: its
# refusal is 77, one line, wherever in the run it came (acquire, renewal or release)
function acl_near(id, kind,    k, a, b) {
  a = A_START[id] + 0; b = A_NDT[id] + 0
  for (k = 1; k <= nf; k++)
    if (FK[k] == (kind == "" ? "acl" : kind) && FS0[k] <= b && FE[k] + GRACE >= a) return 1
  return 0
}
# the faults near [a, b] (for an unexplained finding)
function near(a, b,    k, out) {
  out = ""
  for (k = 1; k <= nf; k++)
    if (FE[k] >= a - 3e6 && FS0[k] <= b + 1e6)
      out = add(out, FK[k] " " sec(FS0[k]) "-" sec(FE[k]) (FKV[k, "run"] != "" ? " run " FKV[k, "run"] : ""))
  return out == "" ? "none" : out
}
function bsearch_first_above(x, P,    lo, hi, mid) {  # first index in 1..n with P > x, or 0
  if (n == 0 || P[n] <= x) return 0
  lo = 1; hi = n
  while (lo < hi) { mid = int((lo + hi) / 2); if (P[mid] > x) hi = mid; else lo = mid + 1 }
  return lo
}

FILENAME == metaf { p = index($0, "="); M[substr($0, 1, p - 1)] = substr($0, p + 1); next }
FILENAME == faultf && $1 == "F" {
  if (!T0) T0 = M["t0"] + 0
  nf++; FK[nf] = $2; FS0[nf] = $3 + 0; FE[nf] = $4 + 0; NK[$2]++
  for (q = 5; q <= NF; q++) { p = index($q, "="); if (p) FKV[nf, substr($q, 1, p - 1)] = substr($q, p + 1) }
  next
}
FILENAME == resf && $1 == "W" {
  nw++; r = $3; f = $4; res = $5
  WRES[r] = res; WT[r] = $2 + 0; WMAX[r] = $6; WF[r] = f
  if ($2 + 0 < lastwt - 1000) { clockback++; if (clockback == 1) clockback_at = $2 }
  if ($2 + 0 > lastwt) lastwt = $2 + 0
  if (res == "T") { nto++; viol("resource", "run " r ": the fenced resource's flock timed out (30s); its write was never decided", r); next }
  if ($6 + 0 != max) viol("resource", sprintf("write %d (run %s, fence %s): the resource logged max %s before it, the replay says %.0f", nw, r, f, $6, max), r)
  expect = (f ~ /^[0-9]+$/ && f + 0 > max) ? "A" : "R"
  if (res != expect) viol("resource", sprintf("write %d (run %s, fence %s, max %.0f): decided %s, the rule says %s", nw, r, f, max, res, expect), r)
  if (res == "A") {
    nacc++
    if (nacc > 1 && f + 0 <= lastacc) viol("resource", sprintf("accepted fence %s after accepted fence %.0f: not strictly increasing", f, lastacc), r)
    lastacc = f + 0; max = f + 0
  } else nrej++
  next
}
FILENAME == supsf && NF == 2 { JOIN[$1] = $2 + 0; next }
FILENAME == runsf {
  # RUN ENTER LEAVE HOW FENCE TOKEN START END STATUS TTL WAIT VIA WORK STDERR SHAPE HOW_NESTED
  nruns_all++; id = $1; A_SE[id] = $14; SHAPEN[$15]++
  # a peer's section (peer.sh: the real client of a layout): class of its layout's key, its
  # exit status counted apart (the client cannot learn of a loss: no status rule)
  cls = $15; if (cls ~ /^peer-/) { cls = substr(cls, 6); PEER[id] = 1; PEERST[cls, $9]++; NPEER[cls]++ }
  if ($15 == "nested") { nnest++; NESTST[$9]++; NESTV[$16 == "-" ? "setm" : $16]++ }
  if ($15 == "supersede") { nsupjob++; SUPJST[$9]++; A_SUP[id] = 1 }
  if ($14 != "file" && $14 != "-") { SEN[$14]++; if ($9 != "-") SEST[$9]++ }
  A_ST[id] = $9; A_EN[id] = $2; A_NDT[id] = $8; A_START[id] = $7; A_TTL[id] = $10; A_SHAPE[id] = $15
  A_HOWN[id] = $16
  if ($9 != "-" && !(id in PEER)) { nrun++; SC[$9]++ }
  if ($2 == "-") next
  if (cls in OTHER) {
    # another key (a pool, a once-per-period key): indices OTHER[cls] + 1, 2, … in the
    # order they entered, apart from the soak key's 1..n
    m = ++NO[cls]; i = OTHER[cls] + m; CLS[i] = cls; SLOTOF[i] = $18; OKEY[i] = $17
    RUN[i] = id; EN[i] = $2 + 0; LV[i] = $3; HOW[i] = $4; FE_[i] = $5 + 0; TOK[i] = $6
    ST[i] = $7; ND[i] = $8; STAT[i] = $9; TTL[i] = $10; IDX[id] = i; if ($6 != "-" && $6 != "none") BYTOK[$6] = i
    if (cls == "plain" || cls == "redisson") next # no fences in the other layouts
    if (((cls, $5) in FOWN)) ODUP[i] = FOWN[cls, $5]
    else FOWN[cls, $5] = id
    next
  }
  n++; RUN[n] = id; EN[n] = $2 + 0; LV[n] = $3; HOW[n] = $4; FE_[n] = $5 + 0; TOK[n] = $6
  ST[n] = $7; ND[n] = $8; STAT[n] = $9; TTL[n] = $10; IDX[id] = n; BYTOK[$6] = n
  PM[n] = (n > 1 && PM[n - 1] > FE_[n]) ? PM[n - 1] : FE_[n]
  # shared holders of the soak key: PMX, the highest fence an exclusive holder entered with
  SHR[n] = ($15 == "shared"); if (SHR[n]) nsh_in++
  PMX[n] = (n > 1 ? PMX[n - 1] : 0); if (!SHR[n] && FE_[n] > PMX[n]) PMX[n] = FE_[n]
  if ($5 in FENCEOWNER) DUP[n] = FENCEOWNER[$5]
  else FENCEOWNER[$5] = id
  next
}
END {
  if (!T0) T0 = M["t0"] + 0
  TEND = M["t_end"] + 0; TSTOP = M["t_stop"] + 0
  GRACE = M["grace_ms"] * 1000; BGRACE = M["break_grace_ms"] * 1000
  PGRACE = (M["planned_grace_ms"] != "" ? M["planned_grace_ms"] : 300) * 1000
  REPL = (M["topology"] == "sentinel" || M["topology"] == "cluster")
  FAILOK = REPL && M["sync_replicas"] + 0 < M["replicas"] + 0

  # --- rlock's stderr: evidence, losses it saw, failed releases ---
  nerrf = split(errlist, ERRF, " ")
  for (q = 1; q <= nerrf; q++) {
    cur = ""
    while ((getline line < ERRF[q]) > 0) {
      if (substr(line, 1, 3) == "== ") { cur = substr(line, 4); continue }
      if (cur == "") continue
      # evidence: what rlock said beyond the routine (connect, round trips, waiting)
      if (line !~ /(EVALSHA|\] EVAL |\] SUBSCRIBE |\] UNSUBSCRIBE |connected to|waiting for '|acquired '|woken on|woken \(|\] BLPOP )/ && ETN[cur] < 4) {
        ETN[cur]++; ET[cur] = ET[cur] "\n      " cur ": " substr(line, 1, 300)
      }
      if (line ~ /lost the lock/) nlostmsg++
      if (line ~ /no longer held at release/) { NOTHELD[cur] = 1; nnotheld++ }
      if (line ~ /could not release/) {
        nrelfail++; e = A_NDT[cur] + 0; byrestart = 0
        for (k = 1; k <= nf; k++) if ((FK[k] == "restart" || FK[k] == "master_kill" || FK[k] == "failover" || FK[k] == "acl" || FK[k] == "oom" || FK[k] == "pause") && FE[k] >= e - 6e6 && FS0[k] <= e) byrestart = 1
        if (!byrestart) viol("release", sprintf("run %s: release failed and was not retried (no restart near its end at %s): %s", cur, sec(e), line), cur)
      }
    }
    close(ERRF[q])
  }

  # --- restarts: did the fence counter go back, did a lock vanish? ---
  for (k = 1; k <= nf; k++) {
    if (FK[k] != "restart") continue
    down = FKV[k, "at1"] - FKV[k, "at"]; sumdown += down; if (down > maxdown) maxdown = down
    if (FKV[k, "fence1"] !~ /^[0-9]+$/ || FKV[k, "fence"] !~ /^[0-9]+$/) { nblind++; continue }
    if (FKV[k, "fence1"] + 0 < FKV[k, "fence"] + 0) { nreset++; RESET[nreset] = k }
    t = FKV[k, "tok"]; i = BYTOK[t]
    if (t != "-" && t != "" && FKV[k, "tok1"] != t && i && leave_of(i) > FKV[k, "at1"] + 0 && \
        FKV[k, "pttl"] * 1000 > down + 100000)
      viol("persistence", sprintf("restart at %s: the lock of run %s (PTTL %sms, still inside) was gone %s later", sec(FS0[k]), RUN[i], FKV[k, "pttl"], ms(down)), RUN[i])
  }
  # A run granted a fence the counter had already given out before a restart that reset it.
  for (i = 1; i <= n; i++)
    for (q = nreset; q >= 1; q--) {
      k = RESET[q]
      if (EN[i] > FS0[k] && FE_[i] <= FKV[k, "fence"] + 0) { AFTERRESET[i] = k; RESETN[k]++; break }
    }
  for (q = 1; q <= nreset; q++) {
    k = RESET[q]
    viol("persistence", sprintf("restart at %s: the fence counter went back from %s to %s; %d later runs were given fences already used", sec(FS0[k]), FKV[k, "fence"], FKV[k, "fence1"], RESETN[k]), "")
  }
  for (i in DUP) if (!(i in AFTERRESET)) {
    if (explain_failover(IDX[DUP[i]], i) != "") { DUPX[i] = 1; ndupx++; continue }
    viol("overlap", sprintf("fence %.0f was granted twice: runs %s and %s (faults near: %s)", FE_[i], DUP[i], RUN[i], near(EN[IDX[DUP[i]]], EN[i])), RUN[i])
  }

  # --- (b) superseded runs and overlaps ---
  for (i = 1; i <= n; i++) {
    lv = leave_of(i); sup = 0
    # a shared holder is superseded only by a later exclusive grant; shared holders of the
    # soak key hold together (docs/GUIDE.md, shared locks)
    if (SHR[i]) j = bsearch_first_above(FE_[i], PMX)
    else j = bsearch_first_above(FE_[i], PM)
    if (j > 0 && j < i) sup = j
    for (k = i + 1; k <= n && EN[k] < lv; k++) {
      if (SHR[i] && SHR[k]) { nshpairs++; continue }
      npairs++
      if (FE_[k] > FE_[i]) { st_ = i; nw_ = k } else { st_ = k; nw_ = i }
      if (st_ in AFTERRESET) npairs_reset++
      else if (explain(st_, nw_) != "") npairs_ok++
      if (!sup && FE_[k] > FE_[i]) sup = k
    }
    if (!sup) continue
    if (i in AFTERRESET) { nsup_reset++; continue }
    SUP[i] = sup; nsup++
    why = explain(i, sup); SUPWHY[i] = why
    if (why != "") { nsup_ok++; NSW[why]++ }
    else if (EN[sup] < EN[i])
      viol("overlap", sprintf("run %s (fence %.0f) entered at %s, after run %s had entered with the later fence %.0f at %s: its grant was stale before it began; no fault explains it (faults near: %s)", \
        RUN[i], FE_[i], sec(EN[i]), RUN[sup], FE_[sup], sec(EN[sup]), near(EN[sup], lv)), RUN[i])
    else
      viol("overlap", sprintf("run %s (fence %.0f) was inside %s-%s while run %s (fence %.0f, a later grant) entered at %s; no fault explains it (faults near: %s)", \
        RUN[i], FE_[i], sec(EN[i]), sec(lv), RUN[sup], FE_[sup], sec(EN[sup]), near(EN[i], lv)), RUN[i])
    SUPST[STAT[i]]++
  }

  # --- the pools (run --limit N and run --limit NAMES, each its own key): never more than
  # their size inside, never one slot to two live holders; a clash is explained as an
  # overlap is (a freeze, a failover) ---
  PSIZE["pool"] = M["pool_n"] + 0
  PSIZE["npool"] = split(M["npool_names"], NPNAME, ",")
  for (q in NPNAME) ISNAME[NPNAME[q]] = 1
  for (pc = 1; pc <= 2; pc++) {
    cls = (pc == 1 ? "pool" : "npool"); PN = PSIZE[cls]; pkey = M[cls "_key"]
    for (a = 1; a <= NO[cls]; a++) {
      k = OTHER[cls] + a; cnt = 1; why_any = ""; cl = ""
      for (b = a - 1; b >= 1; b--) {
        s_ = OTHER[cls] + b
        if (leave_of(s_) <= EN[k]) continue
        cnt++; why = explain(s_, k); if (why != "") why_any = why
        if (SLOTOF[s_] == SLOTOF[k] && SLOTOF[k] != "-") {
          PCLASH[cls]++
          if (why != "") { PCLASHOK[cls]++; NSW[why]++ }
          else cl = add(cl, RUN[s_] " (entered " sec(EN[s_]) ")")
          if (!(s_ in SUP)) { SUP[s_] = k; SUPWHY[s_] = why }
        }
      }
      if (cls == "pool" ? (SLOTOF[k] !~ /^[0-9]+$/ || SLOTOF[k] + 0 < 1 || SLOTOF[k] + 0 > PN) : !(SLOTOF[k] in ISNAME))
        viol("pool", sprintf("run %s held the pool %s (--limit %s) with RLOCK_SLOT %s", RUN[k], pkey, cls == "pool" ? PN : M["npool_names"], SLOTOF[k]), RUN[k])
      if (cl != "")
        viol("pool", sprintf("run %s entered at %s with slot %s of %s, which live holder(s) still held: %s; no fault explains it (faults near: %s)", RUN[k], sec(EN[k]), SLOTOF[k], pkey, cl, near(EN[k] - 1e6, EN[k])), RUN[k])
      if (cnt > PMAX[cls]) PMAX[cls] = cnt
      if (cnt > PN) {
        POVER[cls]++
        if (why_any == "") viol("pool", sprintf("run %s entered at %s while %d others held %s (--limit %d); no fault explains it (faults near: %s)", RUN[k], sec(EN[k]), cnt - 1, pkey, PN, near(EN[k] - 1e6, EN[k])), RUN[k])
      }
    }
  }
  # --- the once-per-period key (run --done-for D, its own key): one holder at a time, and
  # after a run that exited 0 nobody enters for D from its command's end ---
  DMS = M["done_ms"] * 1000; last_ok = 0; dgap = -1
  for (a = 1; a <= NO["done"]; a++) {
    k = OTHER["done"] + a
    for (b = a - 1; b >= 1; b--) {
      s_ = OTHER["done"] + b
      if (leave_of(s_) <= EN[k]) continue
      if (FE_[s_] < FE_[k]) { st_ = s_; nw_ = k } else { st_ = k; nw_ = s_ }
      ndpairs++; why = explain(st_, nw_)
      if (why != "") { ndpairs_ok++; NSW[why]++ }
      else viol("overlap", sprintf("runs %s (fence %.0f) and %s (fence %.0f) both held %s at %s; no fault explains it (faults near: %s)", RUN[st_], FE_[st_], RUN[nw_], FE_[nw_], M["done_key"], sec(EN[k]), near(EN[s_], EN[k])), RUN[st_])
      if (!(st_ in SUP)) { SUP[st_] = nw_; SUPWHY[st_] = why }
    }
    if (last_ok) {
      dg = EN[k] - leave_of(last_ok)
      if (dgap < 0 || dg < dgap) dgap = dg
      # the period runs from the command's end as rlock saw it (after cs.sh's leave): 20ms
      # for the clocks' rounding (the server counts in ms)
      if (dg < DMS - 20000) {
        why = ""
        for (q = 1; q <= nf; q++) {
          if (FS0[q] > EN[k] || FE[q] < ST[last_ok]) continue
          if (FK[q] == "stop" && FKV[q, "run"] == RUN[last_ok]) why = "stop"
          if (FK[q] == "restart" && M["persistence"] != "1") why = "restart"
          if (FAILOK && (FK[q] == "master_kill" || FK[q] == "failover")) why = "failover"
        }
        if (why != "") { ndone_ok++; NSW[why]++ }
        else viol("done-for", sprintf("run %s entered %s at %s, %s after run %s ended 0 (its period: %s); no fault explains it (faults near: %s)", RUN[k], M["done_key"], sec(EN[k]), ms(dg), RUN[last_ok], ms(DMS), near(leave_of(last_ok), EN[k])), RUN[k])
      }
    }
    if (STAT[k] == "0") { last_ok = k; ndone_ok0++ }
  }
  # --- the other layouts (rlock --layout plain|redisson and their real clients, peer.sh,
  # on the same names): one holder at a time; without fences, the one that entered first
  # held first, and an overlap is explained as any other (a freeze, a failover; a restart
  # without persistence) ---
  for (lc = 1; lc <= 2; lc++) {
    cls = (lc == 1 ? "plain" : "redisson")
    for (a = 1; a <= NO[cls]; a++) {
      k = OTHER[cls] + a
      if (RUN[k] in PEER) LPEERIN[cls]++; else LRLIN[cls]++
      for (b = a - 1; b >= 1; b--) {
        s_ = OTHER[cls] + b
        if (leave_of(s_) <= EN[k]) continue
        LPAIRS[cls]++; why = explain(s_, k)
        if (why != "") { LPAIRSOK[cls]++; NSW[why]++ }
        else viol("layout", sprintf("runs %s (%s) and %s (%s) both held %s (--layout %s) at %s; no fault explains it (faults near: %s)", RUN[s_], (RUN[s_] in PEER) ? "its real client" : "rlock", RUN[k], (RUN[k] in PEER) ? "its real client" : "rlock", M[cls "_key"], cls, sec(EN[k]), near(EN[s_], EN[k])), RUN[s_])
        if (!(s_ in SUP)) { SUP[s_] = k; SUPWHY[s_] = why }
      }
    }
  }
  for (i in ODUP) {
    if (explain_failover(IDX[ODUP[i]], i) != "") { DUPX[i] = 1; ndupx++; continue }
    viol("overlap", sprintf("fence %.0f of %s was granted twice: runs %s and %s (faults near: %s)", FE_[i], OKEY[i], ODUP[i], RUN[i], near(EN[IDX[ODUP[i]]], EN[i])), RUN[i])
  }

  # --- superseding jobs: latest wins ---
  # Runs in the order they entered; a superseding job whose first join came before that of
  # one that already entered ran after a newer one.
  for (i = 1; i <= n; i++) {
    if (!(TOK[i] in JOIN)) continue
    nsupin++
    if (maxj && JOIN[TOK[i]] < JOIN[TOK[maxj]])
      viol("supersede", sprintf("run %s, a superseding job that joined at %s, entered at %s, after run %s, a newer one (joined at %s), had entered at %s: it should have been superseded", \
        RUN[i], sec(JOIN[TOK[i]] * 1000), sec(EN[i]), RUN[maxj], sec(JOIN[TOK[maxj]] * 1000), sec(EN[maxj])), RUN[i])
    if (!maxj || JOIN[TOK[i]] > JOIN[TOK[maxj]]) maxj = i
  }

  # --- freezes and breaks ---
  for (k = 1; k <= nf; k++) {
    if (FK[k] == "stop") {
      i = IDX[FKV[k, "run"]]
      if (!i) continue
      STOPPED[i] = k
      if (FS0[k] < leave_of(i)) { nstopped++; STOPST[STAT[i]]++ } else nstopped_late++
      if (FKV[k, "continued"] == "ran" || FKV[k, "cs_continued"] == "ran") nearly++
    } else if (FK[k] == "stop_waiter") {
      # a superseding job frozen while it waited; one granted just before the freeze
      # (entered before it ended) held the lock frozen: judged as a frozen holder
      nwaitfroze++; id = FKV[k, "run"]; WAITST[A_ST[id]]++
      i = IDX[id]
      if (i && EN[i] < FE[k] && !(i in STOPPED)) STOPPED[i] = k
    } else if (FK[k] == "break" && FKV[k, "status"] == "0") {
      nbroke++
      i = BYTOK[FKV[k, "tok"]]
      # Certainly broken under it: it held the lock at the snapshot just before the break
      # and was still inside after the break (so it had not released), or rlock itself
      # found its lock gone at release.
      if (i && (leave_of(i) >= FE[k] || RUN[i] in NOTHELD)) {
        BROKEN[i] = k; nbroken++; BRST[STAT[i]]++
        # time it had to hear the break: a freeze of its own job does not count
        react = leave_of(i) - FE[k] - frozen_within(i, FE[k], leave_of(i))
        if (react > maxreact) { maxreact = react; maxreact_run = RUN[i] }
        if (react > BGRACE)
          viol("break", sprintf("run %s was still inside %s after `rlock break` removed its lock at %s (a holder hears a break within about a second)", RUN[i], ms(react), sec(FS0[k])), RUN[i])
      }
    }
  }

  # --- (c) statuses and hidden losses ---
  for (id in A_ST) {
    if (id in PEER) continue
    s = A_ST[id]; if (s != "-") s = s + 0
    if (s == "-") continue
    ran = (A_EN[id] != "-"); i = ran ? IDX[id] : 0
    if (s == 0 || s == 69 || s == 75 || s == 76) {
    } else if (s == 80 && (id in A_SUP)) {
      # superseded (--superseded-exit-code 80): told apart from a wait that ran out (75)
    } else if (s == 77 && acl_near(id)) {
      nacl77++
    } else if (s == 70 && acl_near(id, "oom")) {
      # a script refused with OOM (the oom fault: maxmemory reached with noeviction) is an
      # error reply rlock reports as 70, one line; nothing half-written stays (the
      # shutdown rule checks every key's expiry)
      noom70++
    } else if ((s == 129 || s == 130 || s == 131 || s == 143) && A_NDT[id] + 0 >= TSTOP) {
    } else if (s == 143 && A_SHAPE[id] == "nested" && A_HOWN[id] == "whilepid" && ran && (i in BROKEN)) {
      # a --while-pid script whose lock was broken while it lived: its keeper sends it
      # SIGTERM (docs/GUIDE.md); the R line gives the script's status, not the nested run's
    } else if (s == 129 || s == 130 || s == 131 || s == 143) {
      viol("status", sprintf("run %s exited %s%s at %s, before the soak was stopping: nobody signalled it", id, s, sig(s), sec(A_NDT[id])), id)
    } else {
      viol("status", sprintf("run %s exited %s%s at %s: not a documented outcome", id, s, sig(s), sec(A_NDT[id])), id)
    }
    if (ran && (s == 69 || s == 75 || s == 80))
      viol("status", sprintf("run %s ran its command (fence %.0f) but exited %s", id, FE_[i], s), id)
    # (a nested run whose outer hold was lost before its command's first line has
    # lost its lease too: 76 without running is its documented outcome)
    if (!ran && (s == 0 || (s == 76 && A_SHAPE[id] != "nested")))
      viol("status", sprintf("run %s exited %s but its command never ran", id, s), id)
    if (!ran || s != 0) continue
    why = ""
    # a failover that lost a grant explains a stale fence (run i's own grant was sound)
    fx = ((i in SUP) && SUPWHY[i] == "failover") || (i in DUPX)
    if (WRES[id] == "R" && !(i in AFTERRESET) && !fx) why = add(why, sprintf("its write with fence %s was rejected as stale (resource max %s)", WF[id], WMAX[id]))
    if ((i in SUP) && SUPWHY[i] != "failover") why = add(why, sprintf("run %s (fence %.0f) was granted the lock at/before %s while it was inside", RUN[SUP[i]], FE_[SUP[i]], sec(EN[SUP[i]])))
    j = ((i in SUP) && SUPWHY[i] == "failover") ? SUP[i] : ((i in DUPX) ? IDX[DUP[i]] : 0)
    if (j && (k = planned_silent(i, j)) != "") why = add(why, sprintf("the failover at %s lost its hold or run %s's, yet both exited 0 after every sentinel named the new master (the one it lost exits 76)", sec(FS0[k]), RUN[j]))
    else if (fx && WRES[id] == "R") nrejx++
    if (i in STOPPED) { k = STOPPED[i]; if (frozen_min(k) > TTL[i] + 0 && FS0[k] < leave_of(i)) why = add(why, sprintf("its rlock was frozen %sms (TTL %sms) at %s", frozen_min(k), TTL[i], sec(FS0[k]))) }
    if (i in BROKEN) why = add(why, sprintf("rlock break removed its lock at %s while it was inside", sec(FS0[BROKEN[i]])))
    if (id in NOTHELD) why = add(why, "rlock logged that it was no longer held at release")
    if (HOW[i] != "ok") why = add(why, "its command was ended by SIG" toupper(HOW[i] == "-" ? "KILL" : HOW[i]))
    if (why != "") { nhidden++; viol("hidden-loss", sprintf("run %s (fence %.0f, inside %s-%s) exited 0 although it lost the lock: %s", id, FE_[i], sec(EN[i]), sec(leave_of(i)), why), id) }
  }
  for (id in WRES) if (WRES[id] == "R" && A_ST[id] == "0") nrej0++
  for (id in NOTHELD) NHST[A_ST[id]]++

  # --- shutdown, target ---
  if (M["final_free"] != "yes") viol("shutdown", "the lock was still held 4s after every contender had ended", "")
  if (M["final_unblocked"] != "" && M["final_unblocked"] != "yes") viol("shutdown", "after the soak, `rlock run -n` did not get in: " M["final_unblocked"] " (a dead waiter or holder blocks the lock)", "")
  if (M["final_noexpiry"] != "") viol("shutdown", "after the soak, keys of the lock have no expiry: " M["final_noexpiry"], "")
  if (M["leftovers"] + 0 > 0) viol("shutdown", M["leftovers"] " process(es) left behind (see meta.leftovers)", "")
  if (M["reached"] != "1") viol("target", sprintf("only %d of %d acquisitions of %s within --max-time %ss", n, M["target"], M["key"] == "" ? "the lock" : M["key"], M["max_time_s"]), "")

  # --- longest gap between acquisitions ---
  for (i = 2; i <= n; i++) if (EN[i] - EN[i - 1] > gap) { gap = EN[i] - EN[i - 1]; gap_at = EN[i - 1] }

  # --- summary ---
  printf "rlock soak: seed %s, %s contenders (%s), persistence %s\n", M["seed"], M["contenders"], REPL ? "every one direct" : M["direct"] " direct, the rest through fault_proxy", M["persistence"] == "1" ? "AOF appendfsync always" : "OFF"
  if (M["masters"] + 0 > 1) printf "  quorum mode       %s masters, a majority of %s; master 0 behind fault_proxy\n", M["masters"], M["quorum"]
  if (REPL) printf "  %-17s %s replica(s) per master, --sync-replicas %s%s; %s\n", M["topology"] " mode", M["replicas"], M["sync_replicas"] + 0, FAILOK ? "" : " (every replica: a failover explains nothing)", M["url"]
  printf "  rlock %s (%s), redis %s\n", M["rlock_version"], M["commit"], M["redis"]
  printf "  wall time         %.1fs\n", (TEND - T0) / 1e6
  printf "  acquisitions      %d (target %s)%s   runs %d   fences %.0f..%.0f\n", n, M["target"], NO["pool"] + NO["npool"] + NO["done"] ? sprintf(", and %d of the pools and the once-per-period key", NO["pool"] + NO["npool"] + NO["done"]) : "", nrun, (n ? FE_[1] : 0), PM[n]
  if (nnest) printf "  nested runs       %d (set -m, setsid, a --while-pid script's job, the holder's own group:%s), their exits:%s\n", nnest, counts(NESTV, "setm setsid whilepid group"), counts(NESTST)
  if (nsupjob) printf "  superseding jobs  %d (run --supersede; %d entered, in the order they joined), their exits:%s; %d frozen while waiting (stop_waiter), their exits:%s\n", nsupjob, nsupin, counts(SUPJST), nwaitfroze, counts(WAITST)
  if (NO["pool"] + NO["npool"] + NO["done"] + SHAPEN["shared"] + SHAPEN["priority"]) {
    printf "  shapes            runs:%s; %d shared holders entered (%d pairs held together)\n", counts(SHAPEN, "shared pool npool done priority plain redisson peer-plain peer-redisson supersede and nested"), nsh_in, nshpairs
    if (M["pool_pct"] + 0) printf "  pool              %s --limit %d: %d entered, at most %d inside at once (%d times over the limit), %d slot clashes (%d explained)\n", M["pool_key"], PSIZE["pool"], NO["pool"], PMAX["pool"], POVER["pool"], PCLASH["pool"], PCLASHOK["pool"]
    if (M["pool_pct"] + 0 && M["npool_key"] != "") printf "  named pool        %s --limit %s: %d entered, at most %d inside at once (%d times over the limit), %d name clashes (%d explained)\n", M["npool_key"], M["npool_names"], NO["npool"], PMAX["npool"], POVER["npool"], PCLASH["npool"], PCLASHOK["npool"]
    if (M["done_pct"] + 0) printf "  done-for          %s --done-for %s: %d entered, %d ended 0; %d overlaps (%d explained); shortest from a success to the next entry %s (%d explained)\n", M["done_key"], ms(DMS), NO["done"], ndone_ok0, ndpairs, ndpairs_ok, dgap < 0 ? "-" : ms(dgap), ndone_ok
  }
  if (M["layout_pct"] + 0) for (lc = 1; lc <= 2; lc++) {
    cls = (lc == 1 ? "plain" : "redisson"); out = ""
    for (q = 0; q < 256; q++) if (PEERST[cls, q] + 0) out = out sprintf(" %d:%d", q, PEERST[cls, q])
    printf "  --layout %-8s %s: %d rlock runs and %d of the real client's sections held it (peers: %s; their exits:%s); %d overlaps (%d explained)\n", cls, M[cls "_key"], LRLIN[cls], LPEERIN[cls], M["peers"], out == "" ? " -" : out, LPAIRS[cls], LPAIRSOK[cls]
  }
  printf "  exit statuses    %s%s%s\n", counts(SC), nacl77 ? sprintf(" (77: %d, each while a command was taken from the soak user)", nacl77) : "", noom70 ? sprintf(" (70: %d, each while maxmemory was reached)", noom70) : ""
  printf "  faults            %d:%s\n", nf - NK["stop_skipped"] - NK["stop_waiter_skipped"] - NK["failover_skipped"] - NK["master_kill_skipped"], counts(NK, "cut client_kill restart stop stop_waiter script_flush break acl pause oom master_stop failover master_kill migrate stop_skipped stop_waiter_skipped failover_skipped master_kill_skipped")
  if (NK["restart"]) printf "  restarts          down (kill -9 to AOF loaded) avg %s, max %s%s\n", ms(sumdown / NK["restart"]), ms(maxdown), nblind ? sprintf("; %d without a readable state after the restart (not checked)", nblind) : ""
  out = counts(STOPST)
  printf "  frozen holders    %d, their exits:%s%s%s\n", nstopped, out, nstopped_late ? sprintf(" (and %d frozen only after their command ended)", nstopped_late) : "", nearly ? sprintf("; %d ran again before the soak continued them (the freeze counted is the real one)", nearly) : ""
  out = counts(BRST)
  printf "  breaks            %d removed a holder; %d runs certainly broken while inside, their exits:%s; slowest out %s after the break (run %s)\n", nbroke, nbroken, out, ms(maxreact), maxreact_run
  printf "  overlaps          %d pairs, %d explained%s\n", npairs, npairs_ok, nreset ? sprintf(", %d after a fence reset", npairs_reset) : ""
  out = counts(SUPST)
  printf "  superseded runs   %d (explained: %d by a freeze, %d by a break%s; unexplained %d), their exits:%s\n", nsup, NSW["stop"], NSW["break"], REPL ? sprintf(", %d by a failover", NSW["failover"]) : "", nsup - nsup_ok, out
  if (REPL) printf "  explained         by a failover that lost an unreplicated grant (docs/GUIDE.md): %d superseded runs, %d fences granted twice, %d refused writes of runs that exited 0\n", NSW["failover"], ndupx, nrejx
  if (nreset) printf "  fence resets      %d restart(s) set the fence counter back; %d runs were given used fences, %d of them stale\n", nreset, length(AFTERRESET), nsup_reset
  printf "  writes            %d attempts, %d accepted, %d rejected (%d of them by runs that exited 0), %d flock timeouts\n", nw, nacc, nrej, nrej0, nto
  out = counts(NHST)
  printf "  rlock messages    %d \"lost the lock\", %d \"could not release\", %d \"no longer held at release\" (their exits:%s)\n", nlostmsg, nrelfail, nnotheld, out
  if (length(SEN)) printf "  broken stderr     runs with stderr on%s; their exits:%s\n", counts(SEN, "full epipe stall"), counts(SEST)
  printf "  longest gap       %s between acquisitions (after %s)\n", ms(gap), sec(gap_at)
  printf "  after the soak    lock free: %s; unblocked: %s; keys without expiry: %s; processes left: %d; redis keys: %s\n", M["final_free"], M["final_unblocked"] == "" ? "-" : M["final_unblocked"] (M["final_unblocked_after_ms"] + 0 > 0 && M["final_unblocked_first"] != "yes" ? " (after " M["final_unblocked_after_ms"] "ms; at first " M["final_unblocked_first"] ")" : ""), M["final_noexpiry"] == "" ? "none" : M["final_noexpiry"], M["leftovers"], M["redis_keys"]
  if (clockback) printf "  NOTE: the wall clock went back by more than 1ms %d time(s) (first at %s); intervals near it are unreliable\n", clockback, sec(clockback_at)
  shown = 0
  for (v = 1; v <= nv; v++) {
    if (++SHOWN[VR[v]] > show) continue
    printf "VIOLATION [%s] %s\n", VR[v], VM[v]
    if (VRUN[v] != "" && A_SE[VRUN[v]] != "file" && A_SE[VRUN[v]] != "")
      printf "    (run %s had its stderr on %s: rlock's own words are lost)\n", VRUN[v], A_SE[VRUN[v]]
    else if (VRUN[v] != "" && ET[VRUN[v]] != "") printf "    rlock stderr:%s\n", ET[VRUN[v]]
  }
  for (r in NVR) if (NVR[r] > show) printf "VIOLATION [%s] ... and %d more of this kind (CHECK_SHOW=N shows more)\n", r, NVR[r] - show
  out = ""; for (r in NVR) out = out sprintf(" %s:%d", r, NVR[r])
  if (nv) { printf "FAIL: %d violation(s):%s\n", nv, out; exit 1 }
  print "PASS"
}
AWK
