# Copyright 2026 edge_infer contributors. Apache-2.0.
"""/diagnostics levels from a stream's counters (edge_infer.core.health), on an injected clock."""

from edge_infer.core.health import OK, STALE, StreamHealth, WARN

WINDOW, WARN_AT, STALE_S = 10.0, 0.25, 5.0


def _judge(h, now, received):
    return h.judge(now, received, '/cam', WINDOW, WARN_AT, STALE_S)


def test_drop_rate_over_the_window_warns_then_clears():
    h = StreamHealth()
    received = dropped = processed = 0
    for t in range(0, 31):          # 30 frames/s, the model keeps 1 in 2: half dropped
        h.update(float(t), True, received, dropped, processed)
        received, dropped, processed = received + 30, dropped + 15, processed + 15
    level, why = _judge(h, 30.0, received)
    assert level == WARN and '150 of 300 frames dropped' in why[0] and '50%' in why[0], why
    for t in range(31, 31 + int(WINDOW) + 1):      # it keeps up again: nothing dropped
        h.update(float(t), True, received, dropped, processed)
        received, processed = received + 30, processed + 30
    assert _judge(h, 31.0 + WINDOW, received) == (OK, [])
    rate, got, lost = h.drop_rate(31.0 + WINDOW, WINDOW)
    assert rate == 0 and got == 30 * WINDOW and lost == 0


def test_drops_under_the_threshold_or_off_stay_ok():
    h = StreamHealth()
    received = dropped = processed = 0
    for t in range(12):             # 10 % dropped
        h.update(float(t), True, received, dropped, processed)
        received, dropped, processed = received + 10, dropped + 1, processed + 9
    assert _judge(h, 11.0, received)[0] == OK
    assert h.drop_rate(11.0, WINDOW)[0] > 0
    assert h.judge(11.0, received, '/cam', WINDOW, 0.0, STALE_S)[0] == OK     # 0 = off
    assert h.judge(11.0, received, '/cam', WINDOW, 0.05, STALE_S)[0] == WARN


def test_stale_when_no_result_for_the_time_says_why():
    h = StreamHealth()
    h.update(0.0, True, 0, 0, 0)        # activated, the camera silent
    assert _judge(h, 0.0, 0)[0] == OK
    h.update(STALE_S, True, 0, 0, 0)
    level, why = _judge(h, STALE_S, 0)
    assert level == STALE and 'no frame received on /cam' in why[0], why
    h.update(STALE_S + 1, True, 1, 0, 1)      # a result: fresh again
    assert _judge(h, STALE_S + 1, 1)[0] == OK
    h.update(2 * STALE_S + 2, True, 40, 0, 1)   # frames come, none gives a result
    level, why = _judge(h, 2 * STALE_S + 2, 40)
    assert level == STALE and '39 frame(s) received on /cam meanwhile, none processed' in why[0]
    assert h.judge(2 * STALE_S + 2, 40, '/cam', WINDOW, WARN_AT, 0.0)[0] == OK   # 0 = off


def test_inactive_is_ok_and_activation_starts_afresh():
    h = StreamHealth()
    h.update(0.0, True, 0, 0, 0)
    h.update(1.0, True, 100, 90, 10)
    h.update(2.0, False, 100, 90, 10)       # deactivated: not stale, not warned
    assert _judge(h, 100.0, 100) == (OK, []) and h.idle_s(100.0) == 0
    h.update(100.0, True, 100, 90, 10)      # activated again: old drops and time forgotten
    assert _judge(h, 100.0, 100) == (OK, [])
    assert _judge(h, 100.0 + STALE_S, 100)[0] == STALE
