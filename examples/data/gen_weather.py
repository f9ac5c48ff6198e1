#!/usr/bin/env python3
"""Writes examples/data/weather.csv, the table examples/explore.masq explores.

Sixty days of readings from a small made-up weather station, with the holes
real logs have: a sensor that drops out for a few days, single missed
readings written as empty cells or NA. Deterministic (a fixed seed and only
random.Random.random, whose sequence Python keeps stable), so running it
again rewrites the same bytes:

    python3 examples/data/gen_weather.py > examples/data/weather.csv
"""
import math
import random

rng = random.Random(18)


def noise(scale):
    return (rng.random() + rng.random() + rng.random() - 1.5) * scale


print('day,temp_c,humidity,"wind, km/h",rain_mm,pressure_hpa')
for day in range(1, 61):
    season = math.sin(2 * math.pi * (day - 10) / 60)
    temp = 12 + 6 * season + noise(3)
    hum = min(100.0, 70 - 8 * season + noise(12))
    wind = abs(14 + noise(10))
    rain = max(0.0, noise(8) - 1) if rng.random() < 0.45 else 0.0
    press = 1013 + noise(9)
    cells = [str(day), "%.1f" % temp, "%.0f" % hum, "%.1f" % wind, "%.1f" % rain, "%.1f" % press]
    # the humidity sensor is down from day 21 to day 26
    if 21 <= day <= 26:
        cells[2] = "NA"
    # a missed reading now and then: an empty cell
    for k in range(1, 6):
        if rng.random() < 0.06:
            cells[k] = ""
    print(",".join(cells))
