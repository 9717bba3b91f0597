#!/usr/bin/env bash
# Plots and reports: the SVG files and HTML pages of a predict and a sweep result (and of a
# comparison) are well-formed XML, every series is named in the legend with a style of its own,
# and a headless Chromium renders the page and a ten-series plot to screenshots that are not
# blank.
# Usage: report_render_test.sh TRAINSIM SWEEP_FILE
set -euo pipefail
trainsim=$1
sweep=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$trainsim" predict --network analytic --format json -o "$dir/predict.json" --plot "$dir/predict.svg"
"$trainsim" report "$dir/predict.json" -o "$dir/predict.html"
"$trainsim" sweep "$sweep" -o "$dir/sweep.jsonl" --plot "$dir/sweep.svg"
"$trainsim" report "$dir/sweep.jsonl" -o "$dir/sweep.html"
# Ten series (NIC bandwidth x sharding strategy): more than the palette's eight colours.
"$trainsim" sweep configs/sweeps/dlrm-what-if.yaml -o "$dir/many.jsonl" --plot "$dir/many.svg" 2>/dev/null
"$trainsim" report "$dir/predict.json" "$dir/many.jsonl" -o "$dir/compare.html"

python3 - "$dir" <<'PY'
import sys, xml.etree.ElementTree as ET
d = sys.argv[1]
svg = "{http://www.w3.org/2000/svg}"
for name in ["predict.svg", "sweep.svg", "many.svg"]:
    root = ET.parse(f"{d}/{name}").getroot()
    assert root.tag == svg + "svg", root.tag
    lines = root.findall(f".//{svg}polyline")
    bars = root.findall(f".//{svg}rect")
    assert len(lines) >= 3, (name, "speedup, efficiency and ideal lines", len(lines))
    assert len(bars) >= 10, (name, "breakdown bars", len(bars))
# Every series is named in the legend, with a style (colour, dash, marker) no other has, and the
# legend lies inside the picture.
import json
for name, results in [("sweep.svg", ["sweep.jsonl"]), ("many.svg", ["many.jsonl"])]:
    labels = set()
    for r in results:
        rows = [json.loads(l) for l in open(f"{d}/{r}") if l.strip()]
        header, rows = rows[0], rows[1:]
        for row in rows:
            others = [f"{a}={row['axes'][a]}" for a in header["axes"] if a != "nodes"]
            labels.add(", ".join(others) if others else header["trainsim_sweep"])
    root = ET.parse(f"{d}/{name}").getroot()
    height = float(root.get("height"))
    legend = [t for t in root.iter(svg + "text") if t.get("class") == "series-label"]
    shown = {t.text.split(". ", 1)[1] for t in legend}
    assert shown == labels, (name, sorted(labels - shown), sorted(shown - labels))
    assert all(float(t.get("y")) < height for t in legend), (name, "legend cut off")
    styles = set()
    for line in root.iter(svg + "line"):
        if line.get("stroke-width") == "2":
            styles.add((line.get("stroke"), line.get("stroke-dasharray")))
    assert len(styles) >= len(labels), (name, "series styles", len(styles), len(labels))
    print(f"{name}: all {len(labels)} series labelled, each styled apart")
for name in ["predict.html", "sweep.html", "compare.html"]:
    root = ET.parse(f"{d}/{name}").getroot()
    ns = "{http://www.w3.org/1999/xhtml}"
    assert root.find(f".//{ns}table") is not None, name
    assert root.find(f".//{svg}svg") is not None, name
    text = "".join(root.itertext())
    assert "trainsim" in text and "Configs used" in text, name
print("well-formed: 3 SVG plots, 3 HTML pages")
PY

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "chromium is not installed (tools/scripts/setup.sh installs it)" >&2
  exit 1
fi
shot() {
  timeout 180 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --disable-background-networking --disable-component-update --no-first-run \
    --window-size="$1" --screenshot="$2" "file://$3" >/dev/null 2>&1
}
shot 1100,1400 "$dir/page.png" "$dir/predict.html"
shot 1160,1000 "$dir/plot.png" "$dir/many.svg"
# TRAINSIM_SCREENSHOTS=DIR keeps the screenshots there, to look at.
if [ -n "${TRAINSIM_SCREENSHOTS:-}" ]; then cp "$dir"/*.png "$TRAINSIM_SCREENSHOTS"/; fi

for png in "$dir/page.png" "$dir/plot.png"; do
python3 - "$png" <<'PY'
# Decode the PNG (8-bit RGB or RGBA, no interlace) with the standard library and check that the
# page is not blank: many pixels away from white, in several colours.
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + length
assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
bpp = 3 if colour == 2 else 4
raw = zlib.decompress(idat)
stride = width * bpp
rows, prev, i = [], bytearray(stride), 0
for _ in range(height):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]
        c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line)
    prev = line
colours, ink = set(), 0
for line in rows[::4]:
    for x in range(0, stride, bpp * 4):
        px = tuple(line[x:x + 3])
        colours.add(px)
        if sum(px) < 720:
            ink += 1
samples = (height // 4 + 1) * (width // 4 + 1)
share = ink / samples
print(f"screenshot {width}x{height}: {share:.1%} of sampled pixels inked, {len(colours)} colours")
assert share > 0.02, "the page rendered blank"
assert len(colours) > 8, "the page has too few colours: plots missing"
PY
done
