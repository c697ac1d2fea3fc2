"""Writes the hostile-but-valid session files of this folder (run: python3 make.py).

Lines that JSON.parse accepts and simd-json does not without help: nesting far beyond
simd-json's default depth limit, number literals beyond the double range (Infinity for
JSON.parse, in usage fields too), repeated keys inside tool-call arguments.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
H = '{"type":"session","version":3,"id":"hostile-%d","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}'
DEEP = '{"type":"custom","id":"d","parentId":null,"data":' + "[" * 3000 + "]" * 3000 + "}"
BIG = '{"type":"custom","id":"n","parentId":"d","data":1e400,"x":-1e400,"y":123456789012345678901234567890}'
USER = '{"type":"message","id":"u","parentId":"n","message":{"role":"user","content":"hi"}}'
ASSISTANT = (
    '{"type":"message","id":"a","parentId":"u","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant",'
    '"content":[{"type":"toolCall","id":"t","name":"x","arguments":{"deep":' + "[" * 100 + "]" * 100
    + ',"inf":1e999,"k":1,"k":{"z":[1,2,{"q":1,"q":2}]}}}],"provider":"p","model":"m",'
    '"usage":{"input":1e400,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":1e400,'
    '"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.5}},"stopReason":"stop"}}'
)
EDIT = '{"type":"context_edit","id":"e","parentId":"a","targetId":"zz","replacement":null}'

files = {
    "01-deep-nesting-and-infinite-usage.jsonl": [H % 1, DEEP, BIG, USER, ASSISTANT],
    "02-same-with-chars-over-four-estimate.jsonl": [H % 2, DEEP, BIG, USER, ASSISTANT, EDIT],
}
for name, lines in files.items():
    with open(os.path.join(HERE, name), "w") as f:
        f.write("\n".join(lines) + "\n")
