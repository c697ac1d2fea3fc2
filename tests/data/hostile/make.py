"""Writes the hostile-but-valid session files of this folder (run: python3 make.py).

Lines that JSON.parse accepts and simd-json does not without help: nesting far beyond
simd-json's default depth limit, number literals beyond the double range (Infinity for
JSON.parse, in usage fields too), repeated keys inside tool-call arguments; and values whose
`.length` Pi reads although they are not strings (an array has one, a number gives NaN); and usage
fields that are strings, objects or arrays, which turn Pi's sums into string concatenations.
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

# Values whose `.length` Pi reads although they are not strings: an array has a length, a
# number gives NaN (the estimate prints null; nothing throws).
NAN_USER = '{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hello"}}'
NAN_SYSTEM = (
    '{"type":"message","id":"s1","parentId":"u1","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"system",'
    '"content":[{"type":"text","text":5},{"type":"text","text":["a",null,true]}],"sections":{"a":7,"b":"",'
    '"c":["x","y"]},"timestamp":1}}'
)
ARRAY_SUMMARY = '{"type":"compaction","id":"c1","parentId":"s1","timestamp":"2026-01-01T00:00:02.000Z","summary":["a","b","c"],"firstKeptEntryId":"u1","tokensBefore":9}'
NUMBER_SUMMARY = '{"type":"compaction","id":"c2","parentId":"c1","timestamp":"2026-01-01T00:00:03.000Z","summary":12,"firstKeptEntryId":"c2","tokensBefore":9}'
NAN_ASSISTANT = (
    '{"type":"message","id":"a1","parentId":"s1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant",'
    '"content":[{"type":"text","text":42},{"type":"thinking","thinking":["x"]}],"provider":"p","model":"m",'
    '"usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"total":0}},"stopReason":"stop"}}'
)
NAN_EDIT = '{"type":"context_edit","id":"e1","parentId":"a1","targetId":"none","replacement":null}'

# Usage fields that are not numbers: Pi's `total += usage.x` follows JavaScript's `+`, so a
# string (or an object, or an array) turns the sum into a string and later numbers append.
ODD_USER = '{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hello there"}}'
ODD_A1 = (
    '{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant",'
    '"content":[{"type":"text","text":"hi"}],"provider":"p","model":"m","usage":{"input":"100","output":5,"cacheRead":null,'
    '"cacheWrite":true,"totalTokens":"106","cost":{"total":"0.5"}},"stopReason":"stop"}}'
)
ODD_A2 = (
    '{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant",'
    '"content":[{"type":"text","text":"again"}],"provider":"p","model":"m","usage":{"input":7,"output":{},"cacheRead":[1,2],'
    '"cacheWrite":0,"cost":{"total":0.25}},"stopReason":"stop"}}'
)
ODD_WARM = (
    '{"type":"usage","id":"w1","parentId":"a2","timestamp":"2026-01-01T00:00:03.000Z","kind":"cache_warm","provider":"p",'
    '"model":"m","usage":{"input":0,"output":0,"cacheRead":"9","cacheWrite":0,"cost":{"total":0.1}}}'
)
ODD_U2 = '{"type":"message","id":"u2","parentId":"w1","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"user","content":"more"}}'
ODD_A3 = (
    '{"type":"message","id":"a3","parentId":"u2","timestamp":"2026-01-01T00:00:05.000Z","message":{"role":"assistant",'
    '"content":[],"provider":"p","model":"m","usage":{"input":"40","output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":0,'
    '"cost":{"total":0}},"stopReason":"stop"}}'
)

# Tool names that are objects: Pi's getCurrentTools keys a Map by `tool.name`, and two objects are
# two keys even when they are written alike, in one system message or in two (issue 17 asked
# whether pisa merged those of different messages). The estimate counts every tool it keeps.
TOOL = '{"name":%s,"description":"%s","parameters":{"type":"object"}}'
OBJ_USER = '{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}'
OBJ_SYS1 = (
    '{"type":"message","id":"s1","parentId":"u1","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"system",'
    '"content":"rules","toolsAdded":[' + TOOL % ('{"n":1}', "first tool, quite a long description") + ","
    + TOOL % ('"read"', "reads") + '],"timestamp":1}}'
)
OBJ_SYS2 = (
    '{"type":"message","id":"s2","parentId":"s1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"system",'
    '"content":"more","toolsAdded":[' + TOOL % ('{"n":1}', "second") + "," + TOOL % ('["x"]', "third") + "],"
    '"toolsRemoved":[{"name":{"n":1}},{"name":"read"}],"timestamp":2}}'
)
OBJ_EDIT = '{"type":"context_edit","id":"e1","parentId":"s2","targetId":"none","replacement":null}'

# Repeated keys in a content block: JSON.parse keeps the last `type`, so Pi counts this block as
# text, not as a tool call, in getSessionStats and in the estimate.
DUP_USER = OBJ_USER
DUP_ASSISTANT = (
    '{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant",'
    '"content":[{"type":"toolCall","id":"t1","name":"read","arguments":{"p":"x"},"type":"text","text":"plain"},'
    '{"type":"toolCall","id":"t2","name":"ls","arguments":{},"type":"text","text":"more"},'
    '{"type":"text","text":"t","type":"toolCall","id":"t3","name":"ls","arguments":{}}],"provider":"p","model":"m",'
    '"usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"total":0}},"stopReason":"stop"}}'
)

files = {
    "08-object-tool-names-in-two-system-messages.jsonl": [H % 8, OBJ_USER, OBJ_SYS1, OBJ_SYS2, OBJ_EDIT],
    "09-repeated-type-key-in-content-blocks.jsonl": [H % 9, DUP_USER, DUP_ASSISTANT, OBJ_EDIT.replace('"s2"', '"a1"')],
    "06-usage-fields-that-are-strings-objects-arrays.jsonl": [H % 6, ODD_USER, ODD_A1, ODD_A2, ODD_WARM],
    "07-estimate-from-string-usage.jsonl": [H % 7, ODD_USER, ODD_A1, ODD_A2, ODD_WARM, ODD_U2, ODD_A3, ODD_U2.replace('"u2"', '"u3"', 1).replace('"w1"', '"a3"')],
    "03-array-summary-and-nan-system-sections.jsonl": [H % 3, NAN_USER, NAN_SYSTEM, ARRAY_SUMMARY],
    "04-number-summary-gives-nan.jsonl": [H % 4, NAN_USER, NAN_SYSTEM, ARRAY_SUMMARY, NUMBER_SUMMARY],
    "05-nan-text-lengths-in-chars-over-four.jsonl": [H % 5, NAN_USER, NAN_SYSTEM, NAN_ASSISTANT, NAN_EDIT],
    "01-deep-nesting-and-infinite-usage.jsonl": [H % 1, DEEP, BIG, USER, ASSISTANT],
    "02-same-with-chars-over-four-estimate.jsonl": [H % 2, DEEP, BIG, USER, ASSISTANT, EDIT],
}
for name, lines in files.items():
    with open(os.path.join(HERE, name), "w") as f:
        f.write("\n".join(lines) + "\n")
