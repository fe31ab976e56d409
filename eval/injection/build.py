"""Writes dev.jsonl and test.jsonl from the two source files: within each (label, class), items
alternate dev, test, dev, ... so both halves hold every class. Run: python3 eval/injection/build.py"""
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from source_malicious import M
from source_benign import B
dev, test = [], []
for label, groups in (("malicious", M), ("benign", B)):
    for cls, items in groups.items():
        assert len(items) == len(set(items)), cls
        for i, text in enumerate(items):
            (dev if i % 2 == 0 else test).append({"text": text, "label": label, "class": cls})
for name, rows in (("dev", dev), ("test", test)):
    with open(os.path.join(here, name + ".jsonl"), "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
print({n: {"benign": sum(r["label"] == "benign" for r in rows), "malicious": sum(r["label"] == "malicious" for r in rows)} for n, rows in (("dev", dev), ("test", test))})
