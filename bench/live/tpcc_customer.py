#!/usr/bin/env python3
"""Generate a TPC-C-like customer table (TPC-C 5.0 clause 4.3.3.1) in a
SQLite database, with a secondary index on c_zip: the workload of the
libprefetch paper's ORDER BY experiment (bench/live/run.sh, "sqlite").

    tpcc_customer.py DB ROWS

Rows are inserted in c_id order, so a query ordered by zip visits the
table's pages in random order through the index. Seeded: the same ROWS
give the same database."""
import random
import sqlite3
import string
import sys

SYLLABLES = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"]


def last_name(n):
    return SYLLABLES[n // 100] + SYLLABLES[(n // 10) % 10] + SYLLABLES[n % 10]


def astr(r, lo, hi):
    return "".join(r.choices(string.ascii_letters, k=r.randint(lo, hi)))


def main():
    db, rows = sys.argv[1], int(sys.argv[2])
    r = random.Random(42)
    con = sqlite3.connect(db)
    con.execute("PRAGMA page_size=4096")
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    con.execute(
        """CREATE TABLE customer (
        c_id INTEGER PRIMARY KEY, c_d_id INTEGER, c_w_id INTEGER,
        c_first TEXT, c_middle TEXT, c_last TEXT,
        c_street_1 TEXT, c_street_2 TEXT, c_city TEXT, c_state TEXT, c_zip TEXT,
        c_phone TEXT, c_since TEXT, c_credit TEXT, c_credit_lim REAL,
        c_discount REAL, c_balance REAL, c_ytd_payment REAL,
        c_payment_cnt INTEGER, c_delivery_cnt INTEGER, c_data TEXT)"""
    )
    batch = []
    for i in range(1, rows + 1):
        batch.append((
            i, (i // 3000) % 10 + 1, i // 30000 + 1,
            astr(r, 8, 16), "OE", last_name(r.randrange(1000)),
            astr(r, 10, 20), astr(r, 10, 20), astr(r, 10, 20), astr(r, 2, 2),
            "%04d11111" % r.randrange(10000),
            "".join(r.choices(string.digits, k=16)), "2026-01-01 00:00:00",
            "GC" if r.random() < 0.9 else "BC", 50000.0, r.randint(0, 5000) / 10000,
            -10.0, 10.0, 1, 0, astr(r, 300, 500),
        ))
        if len(batch) == 10000:
            con.executemany("INSERT INTO customer VALUES (" + ",".join("?" * 21) + ")", batch)
            batch.clear()
    if batch:
        con.executemany("INSERT INTO customer VALUES (" + ",".join("?" * 21) + ")", batch)
    con.execute("CREATE INDEX customer_zip ON customer (c_zip)")
    con.commit()
    con.close()


if __name__ == "__main__":
    main()
