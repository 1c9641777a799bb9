# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Recorded sysfs trees laid out like real boards' power monitors (shared by test rooms)."""

import os


def _w(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'{text}\n')


def _link(link, target):
    link.parent.mkdir(parents=True, exist_ok=True)
    target.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(target, link.parent), link)


def _jetson_jp5_tree(root):
    """Orin Nano-like: /sys/bus/i2c/devices/1-0040 links to the device; hwmon3 is the INA3221."""
    plat = root / 'sys/devices/platform/bus@0/c240000.i2c/i2c-1'
    _link(root / 'sys/bus/i2c/devices/1-0040', plat / '1-0040')
    _link(root / 'sys/bus/i2c/devices/1-0041', plat / '1-0041')
    _link(root / 'sys/bus/i2c/devices/0-004c', plat / '0-004c')
    hw = plat / '1-0040/hwmon/hwmon3'
    _w(hw / 'name', 'ina3221')
    _w(hw / 'update_interval', '5')  # ms
    for n, (label, mv, ma) in enumerate([('VDD_IN', 5072, 1280), ('VDD_CPU_GPU_CV', 5064, 424),
                                         ('VDD_SOC', 5064, 560)], start=1):
        _w(hw / f'in{n}_label', label)
        _w(hw / f'in{n}_input', mv)
        _w(hw / f'curr{n}_input', ma)
        _w(hw / f'curr{n}_crit', 10000)
    hw2 = plat / '1-0041/hwmon/hwmon4'  # second monitor: one NC channel, one without a shunt
    _w(hw2 / 'name', 'ina3221')
    _w(hw2 / 'in1_label', 'NC')
    _w(hw2 / 'in1_input', 0)
    _w(hw2 / 'curr1_input', 0)
    _w(hw2 / 'in2_label', 'VDD_5V0_IO')
    _w(hw2 / 'in2_input', 5000)  # no curr2_input: skipped
    _w(plat / '0-004c/hwmon/hwmon0/name', 'tmp451')  # not a power monitor
    _w(plat / '0-004c/hwmon/hwmon0/temp1_input', 41000)
    return hw
