"""Checks a plan drawing and a run report for content (tests/mpi/pictures.sh).
    check_pictures.py svg PLAN.svg RANKS        the SVG parses as XML and names every rank
    check_pictures.py html RUN_DIR [TEXT...]    report.html references every PNG under RUN_DIR/report,
                                               each referenced PNG decodes, and each TEXT is on the page
Prints what is wrong and exits 1."""
import os
import re
import struct
import sys
import xml.etree.ElementTree as ET
import zlib


def check_svg(path, ranks):
    root = ET.parse(path).getroot()  # raises on malformed XML
    assert root.tag == "{http://www.w3.org/2000/svg}svg", f"{path}: root element {root.tag}, expected svg"
    texts = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    missing = [r for r in range(ranks) if not re.search(rf"\brank {r}\b", texts)]
    assert not missing, f"{path}: no text names rank(s) {missing}"


def png_decodes(path):
    """Signature, every chunk's CRC, IHDR first, IDAT inflating to height * (1 + row bytes), IEND last."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: no PNG signature"
    pos, chunks, idat = 8, [], b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"{path}: chunk {kind} has a bad CRC"
        chunks.append((kind, body))
        idat += body if kind == b"IDAT" else b""
        pos += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND", f"{path}: chunks {[k for k, _ in chunks]}"
    width, height, depth, colour = struct.unpack(">IIBB", chunks[0][1][:10])
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
    expected = height * (1 + (width * channels * depth + 7) // 8)
    assert len(zlib.decompress(idat)) == expected, f"{path}: pixel data is not {width}x{height}"
    return width, height


def check_html(run_dir, texts):
    page = open(os.path.join(run_dir, "report.html")).read()
    referenced = set(re.findall(r'<img src="([^"]+\.png)"', page))
    on_disk = {f"report/{f}" for f in os.listdir(os.path.join(run_dir, "report")) if f.endswith(".png")}
    assert on_disk <= referenced, f"PNGs the page does not show: {sorted(on_disk - referenced)}"
    for image in sorted(referenced):
        w, h = png_decodes(os.path.join(run_dir, image))
        assert w > 100 and h > 100, f"{image}: {w}x{h}"
    for t in texts:
        assert t in page, f"report.html does not say '{t}'"
    print(f"{run_dir}/report.html: {len(referenced)} PNGs, all decode")


if __name__ == "__main__":
    try:
        if sys.argv[1] == "svg":
            check_svg(sys.argv[2], int(sys.argv[3]))
        else:
            check_html(sys.argv[2], sys.argv[3:])
    except (AssertionError, ET.ParseError, OSError) as e:
        print(f"check_pictures: {e}")
        sys.exit(1)
