# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Online re-selection's settings and switch rule (no ROS): when a runner-up takes over.

:class:`.choice.LiveChoice` keeps the chosen backend right at run time; this
module holds what it decides by: :class:`LiveSettings` (node parameters map
onto them) and the switch rule (:func:`paired_verdict`, :func:`sign_test_p`).
How samples are paced: :mod:`.pacing`; the cues that the load changed:
:mod:`.load_watch`.

How runners-up are sampled and judged (objective ``latency`` only): the
runners-up (the next best candidates of the profile, at most ``runners_up``;
the last place goes to the best one with another thread count than the
chosen one's when none of the others has one) stay open and are sampled on
real frames in one of two ways:

* **served** (``serve``, the default): a runner-up expected within
  ``serve_max_ratio`` (1.25x) of the chosen one's time runs a frame itself,
  at most one in ``serve_every`` (3); its result goes out and names it
  (every :class:`Result` names the backend that ran it). It is compared with
  the mean of the chosen one's frames around it (``reference_frames`` // 2 =
  4 before it and as many after), and costs only what it takes beyond that:
  nothing when it is faster. Why: at 5 % of compute, extra runs give about
  one sample a second, and a runner-up 4 % faster needs 10-15 of them (the
  sign test below), so a choice took 10-20 s to follow a load change; a
  served frame of a close candidate costs ~0, so the same duty buys a sample
  every 3rd frame. Comparing with the chosen one's recent frames is as tight
  as pairing on the same frame: the robust spread of the log ratio was 0.055
  vs 0.056 (a full core of foreign load), 0.083 vs 0.175 (half a core) in
  the regret benchmark's recordings;
* **extra run** (a runner-up further behind, or ``serve`` off): after a
  frame's result is out it runs on that frame's preprocessed input (its
  output discarded), paired with the chosen one's run on the same frame.

The switch rule
(:func:`paired_verdict`) looks at a runner-up's last pairs (at most
``max_pairs``, none older than ``window_s``) and passes when both hold:

* **effect**: the runner-up took under ``1 - min_margin`` (4 %) of the
  chosen one's time over those frames (sum over sum: time-weighted, as the
  robot pays it; a median hides a stall tail: measured under a full core of
  foreign load, OpenVINO t1 bf16 / t2 bf16 was 0.965 by median but 0.907 by
  time, t2's second thread waiting on the busy core). A gain under 4 % is
  not worth a switch (the regret goal is 5 %);
* **consistency**: a one-sided sign test says the runner-up is faster on
  the frames themselves, p <= ``alpha`` (0.05) that a candidate as fast as
  the chosen one wins that many: 5 of 5 pairs (p 0.031), 7 of 8 (0.035),
  9 of 10 (0.011).

**Two looks.** The rule is looked at after every new pair (the first look,
on at least ``min_pairs`` = 5): looked at that often, a test at p <= 0.05
passes by chance. Between two candidates of equal speed it did about once
per 240 pairs with independent noise, and far more often when a load shared
by both comes and goes in bursts (the other models of a four-model
container): a served frame was judged against the chosen one's last frames,
which a burst's edge biases (now: the frames around it). Measured in the
container on a 2-core Xeon: the detector swung between OpenVINO bf16 and
bf16+pre every 20-100 s, each time on "9 of 10 frames, p = 0.011". So a
first look that passes only starts a **confirming look**: the runner-up's
pairs are forgotten, and the next ``confirm_pairs`` (7) fresh pairs are
judged once, by the same rule (7 of 7: p = 0.008). Only if that passes too
does the runner-up take over; if not, it starts over. The confirming look is
a single test on new data, so it lets through at most 0.8 % of the first
looks' chance passes, however often the first look is made
(bench/product/switch_rule.py, 6 x 30 simulated minutes at 10 fps, two equal
candidates: false switches per 10 minutes 3.8 -> 0.33 with independent
noise, 13.3 -> 0.33 under bursts with 5 fresh pairs; with 7 and the frames
around a served one, 0.17 and 0; a 2x slowdown is followed in 5.7 s
median, max 6.6, instead of 2.7 s with one look). A load change forgets a first look with the
pairs it stood on. **Hysteresis**: going back to the choice left less than
``dwell_s`` (60 s) ago needs twice the margin. A served frame is judged
against the mean of the chosen one's frames around it, as the robot pays for
them: against their median a choice that stalls now and then (a device
another process holds 60 of every 70 ms: 7 ms median, 26 ms mean) never lost
a frame to a 13 ms CPU path (test_live_choice). The price: against a mean
that contention stalls pull up, a frame of an equal candidate comes in under
it somewhat more often than half the time, which the first look cannot tell
from a real gain; the confirming look is there for that.

At least ``min_pairs`` pairs are needed (5: the fewest with which the test
can reach 0.05). The runner-up then takes over between two frames and the
old choice becomes a runner-up with no pairs. Both directions (the chosen
slowing down, another speeding up) are the same comparison.

Which runner-up runs next: one not timed in the last ``window_s`` first,
else the one with the lowest median ratio over its last ``min_pairs`` pairs
(the most likely to win gathers its evidence; a clearly slower one costs
one run per ``window_s``). Cost: runner-up time (served: beyond the chosen
one's) stays under ``duty`` x the
chosen one's time over the last ``horizon_s`` seconds, and the runs are
spread evenly at that pace (a burst of pairs from one moment says little
more than one pair, and spends the duty the next change needs; the pace
follows a typical run, the median of the last ones): in steady
state at most half the duty (one run per ``probe_interval_s`` / runners-up
at most), so a reserve builds up; eager, the whole duty plus the reserve
spread over ``reserve_s``, while the runner-up picked is ahead (median ratio
under 1), for ``alert_s`` seconds after a cue that the load changed, and
after such a cue (within ``window_s``) until the runner-up picked has
``max_pairs`` pairs (in a change's transient both run slow and noisy; a
few early pairs against the eventual winner had sent it back to the steady
pace, and in one recording the choice then never followed). The cue:
the chosen one's median latency over its last ``level_frames`` frames and
over the ``level_frames`` before both moved the same way by more than
``alert_change`` from its level. Pairs describe the load they were taken
under and are forgotten (besides aging out after ``window_s``) when there
is evidence that it changed: the CPU time other processes used (``/proc``,
as the profile's load record) over two successive ``load_period_s``
windows both moved the same way by more than ``load_change_cores`` (the
pairs from before the older window), a drift alarm (those from before its
window) and a switch (all). A move of the chosen one's latency alone does
not forget them: under a busy core it swings by 30-90 % every second or
two, and forgetting on it (a median of 5 frames moved by 20 %) kept every
runner-up under 5 pairs through a whole 20 s phase in the benchmark. A
load that slows a runner-up but not the chosen one (a 1-thread choice
when a core frees up) moves no latency of the chosen one at all.
The budget is the limit for extra runs: at 5 % of a 4-6 ms model's time
at 15-25 frames a second, about one pair a second, so a runner-up 5-10 %
faster on 70-80 % of the frames takes 5-20 s to be recognised that way;
served frames of a close one (cost ~0) come every ``serve_every`` frames.
"""

from dataclasses import dataclass
import math
import statistics
from typing import Callable, Dict, Optional, Sequence, Tuple

from ..measure.selection import OBJECTIVES, PERCENTILES


@dataclass
class LiveSettings:
    """How the choice is kept right at run time (node parameters map onto these)."""

    objective: str = 'latency'
    max_latency_ms: float = 0.0
    min_accuracy: float = 0.0
    latency_percentile: int = 0         # 0 = config/backends.yaml's
    drift_threshold: float = 1.5        # 0 = off
    drift_window_s: float = 5.0
    duty: float = 0.05                  # 0 = no online re-selection
    runners_up: int = 2
    runners_per_look: int = 1           # ... open at once in a look, in turn (0: all of them)
    runners_other_libraries: bool = False   # a look may import a library (it stays imported)
    runners_idle_s: float = 0.0         # close them after this long without a cue (0: never)
    runners_recheck_s: float = 120.0    # ... and open them for a look this often
    runners_memory_mb: float = 64.0     # all open runners-up: looks take turns (0: no cap)
    min_margin: float = 0.04            # the runner-up's time must be under 1 - this
    alpha: float = 0.05                 # sign test: the runner-up faster with p <= alpha
    min_pairs: int = 5                  # fewest pairs for the first look
    confirm_pairs: int = 7              # fresh pairs of the confirming look (0: no second look)
    dwell_s: float = 60.0               # back to the choice left within this: 2 x min_margin
    max_pairs: int = 10                 # the decision uses a runner-up's last max_pairs
    window_s: float = 15.0              # pairs older than this are forgotten
    probe_interval_s: float = 2.0
    alert_change: float = 0.2
    level_frames: int = 10              # the load moved: two medians of this many agree
    alert_s: float = 3.0
    horizon_s: float = 30.0
    reserve_s: float = 10.0             # eager runs spend the unused duty over this
    steady_share: float = 0.5           # steady pace: at most this share of the duty
    serve: bool = True                  # a close runner-up may run a frame (its result out)
    serve_max_ratio: float = 1.25       # ... when expected under this x the chosen one's time
    serve_every: int = 3                # ... on at most one frame in this many
    reference_frames: int = 9           # a served frame vs the chosen one's, half before it
    load_change_cores: float = 0.2      # foreign load moved this much: the load changed
    load_period_s: float = 1.0          # (load_change_cores 0: /proc is not read)
    provisional: bool = True            # incomplete profile: serve at once, profile behind
    profile_after_s: float = 3.0        # ... from the first frame served, or after this long
    settle_first: bool = True           # ... the likely winners first, the rest after (settle.py)
    remote_retry_s: float = 30.0        # a server that failed is a candidate again after this

    def check(self, names: Optional[Dict[str, str]] = None) -> 'LiveSettings':
        """Raise ValueError naming the first bad setting; return self.

        ``names``: the user-facing name of a field where it differs (a node's
        parameter ``reselect_duty`` is ``duty`` here).
        """
        def bad(field: str, use: str) -> ValueError:
            name = (names or {}).get(field, field)
            return ValueError(f"parameter '{name}' is {getattr(self, field)!r}: use {use}")
        if self.objective not in OBJECTIVES:
            raise bad('objective', f"one of {', '.join(OBJECTIVES)}")
        if self.max_latency_ms < 0:
            raise bad('max_latency_ms', '0 (no limit) or more')
        if not 0 <= self.min_accuracy <= 1:
            raise bad('min_accuracy', 'a value in [0, 1]')
        if self.drift_threshold != 0 and self.drift_threshold <= 1:
            raise bad('drift_threshold', '0 (off) or a ratio > 1')
        if self.drift_window_s <= 0:
            raise bad('drift_window_s', 'a positive number of seconds')
        if self.latency_percentile and self.latency_percentile not in PERCENTILES:
            raise bad('latency_percentile',
                      f"0 (the config's) or one of {', '.join(map(str, PERCENTILES))}")
        if not 0 <= self.duty <= 0.5:
            raise bad('duty', '0 (off) to 0.5')
        if not 0 <= self.min_margin < 0.5:
            raise bad('min_margin', 'a share in [0, 0.5)')
        if self.confirm_pairs and not self.min_pairs <= self.confirm_pairs <= self.max_pairs:
            raise bad('confirm_pairs', f'0 (one look) or {self.min_pairs} to {self.max_pairs}')
        if self.dwell_s < 0:
            raise bad('dwell_s', '0 or more seconds')
        if not self.remote_retry_s > 0:
            raise bad('remote_retry_s', 'a positive number of seconds')
        if self.runners_idle_s < 0:
            raise bad('runners_idle_s', '0 (always open) or more seconds')
        if self.runners_idle_s and self.runners_recheck_s <= self.runners_idle_s:
            raise bad('runners_recheck_s', 'more seconds than runners_idle_s')
        if self.runners_memory_mb < 0:
            raise bad('runners_memory_mb', '0 (no cap) or more MB')
        if self.profile_after_s < 0:
            raise bad('profile_after_s', '0 or more seconds')
        return self


def sign_test_p(wins: int, n: int) -> float:
    """Return P(at least ``wins`` of ``n`` fair coin flips): the one-sided sign test's p."""
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / 2 ** n if n else 1.0


@dataclass
class Verdict:
    """The switch rule applied to one runner-up's pairs."""

    n: int                  # pairs
    wins: int               # pairs where the runner-up was faster
    p: float                # sign test, one-sided
    time_ratio: float       # runner-up time / chosen time over the pairs
    chosen_ms: float        # medians
    runner_ms: float
    switch: bool


def paired_verdict(pairs: Sequence[Tuple[float, float]], min_pairs: int = 5,
                   min_margin: float = 0.04, alpha: float = 0.05) -> Verdict:
    """Judge (chosen ms, runner-up ms) pairs, each from one frame: switch to the runner-up.

    Switch when there are at least ``min_pairs`` pairs, the runner-up's total
    time is under ``1 - min_margin`` x the chosen one's, and it was faster on
    so many of the frames that a candidate as fast as the chosen one would do
    that with probability at most ``alpha`` (one-sided sign test; a tie
    counts as a loss).
    """
    n = len(pairs)
    if not n:
        return Verdict(0, 0, 1.0, float('nan'), float('nan'), float('nan'), False)
    wins = sum(1 for c, r in pairs if r < c)
    p = sign_test_p(wins, n)
    mine = sum(c for c, _ in pairs)
    ratio = sum(r for _, r in pairs) / mine if mine > 0 else float('inf')
    return Verdict(n, wins, p, ratio, statistics.median(c for c, _ in pairs),
                   statistics.median(r for _, r in pairs),
                   n >= min_pairs and ratio < 1 - min_margin and p <= alpha)


def dwell_margin(settings: LiveSettings, switches: Sequence[dict], name: str,
                 now: float) -> float:
    """Return the margin ``name`` must beat: twice ``min_margin`` if left < ``dwell_s`` ago.

    ``switches``: the switches so far, each with its time ``t`` and ``from``.
    """
    last = switches[-1] if switches else None
    if last is not None and last['from'] == name and now - last['t'] < settings.dwell_s:
        return 2 * settings.min_margin
    return settings.min_margin


def two_looks(pool, name: str, now: float, settings: LiveSettings, chosen: str,
              margin: float, log: Callable[[str], None]) -> Optional[Tuple[Verdict, str]]:
    """Apply the rule's two looks to runner-up ``name``'s pairs in ``pool``; (verdict, evidence).

    First look (:func:`paired_verdict` on its last pairs, after every new
    pair): when it passes, the pool forgets the pairs and the next
    ``confirm_pairs`` fresh ones are judged once by the same rule; only if
    that passes too is the verdict returned, with the evidence for the switch
    line. None: no switch (yet). ``pool``: a :class:`.runners_up.RunnerPool`.
    """
    st = settings
    pairs = pool.pairs(name)
    first = pool.screened(name, now)
    if first is None:
        v = paired_verdict([(p[1], p[2]) for p in pairs], st.min_pairs, margin, st.alpha)
        if not v.switch:
            return None
        if st.confirm_pairs:
            pool.screen(name, now, v)
            log(f'runner-up {name} took {v.time_ratio:.2f}x the time of {chosen} over '
                f'{v.n} frames (p = {v.p:.3f}): confirming on the next {st.confirm_pairs}')
            return None
        looks = ''
    else:
        if len(pairs) < st.confirm_pairs:
            return None
        pairs = pairs[-st.confirm_pairs:]
        v = paired_verdict([(p[1], p[2]) for p in pairs], st.confirm_pairs, margin, st.alpha)
        pool.unscreen(name, forget_pairs=not v.switch)
        if not v.switch:
            log(f'runner-up {name} not confirmed: {v.time_ratio:.2f}x over {v.n} fresh '
                f'frames, faster in {v.wins} (p = {v.p:.3f})')
            return None
        looks = (f'; confirming a first look of {first.time_ratio:.2f}x over {first.n} '
                 f'frames (p = {first.p:.3f})')
    return v, (f'{name} took {v.time_ratio:.2f}x the time of {chosen} over {v.n} frames '
               f'paired in the last {now - pairs[0][0]:.1f} s (median {v.runner_ms:.2f} vs '
               f'{v.chosen_ms:.2f} ms; margin {margin:.0%}), faster in {v.wins} of {v.n} '
               f'(sign test p = {v.p:.3f} <= {st.alpha:g}){looks}')
