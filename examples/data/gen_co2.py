#!/usr/bin/env python3
"""Writes examples/data/co2_mlo.csv, the table examples/explore.masq explores.

The weekly CO2 readings of the Mauna Loa Observatory, March 1958 to the end
of 1969, cut from the public-domain series that Debian's python3-statsmodels
ships (statsmodels/datasets/co2/co2.csv: Keeling, C.D. and T.P. Whorf, 2004,
Scripps Institution of Oceanography; "This is public domain." says its
data.py). The weeks with no reading stay in, with an empty cell, as in the
source. Three columns: the week's date in ISO form, the reading in ppm, and
the season of its month (meteorological, northern hemisphere), a text
column. Deterministic:

    python3 examples/data/gen_co2.py > examples/data/co2_mlo.csv
"""
import csv
import sys

SRC = "/usr/lib/python3/dist-packages/statsmodels/datasets/co2/co2.csv"
SEASONS = ["winter", "winter", "spring", "spring", "spring", "summer",
           "summer", "summer", "autumn", "autumn", "autumn", "winter"]

out = csv.writer(sys.stdout, lineterminator="\n")
out.writerow(["week", "co2_ppm", "season"])
with open(SRC, newline="") as f:
    for row in list(csv.reader(f))[1:]:
        date, co2 = row
        if int(date[:4]) > 1969:
            break
        iso = "%s-%s-%s" % (date[:4], date[4:6], date[6:])
        out.writerow([iso, co2, SEASONS[int(date[4:6]) - 1]])
