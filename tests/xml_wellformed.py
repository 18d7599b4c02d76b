#!/usr/bin/env python3
"""tests/xml_wellformed.py FILE...: parses each file as XML (the SVGs the programs write).
Prints one line per file that is not well-formed ("FILE: the parser's message") and exits
0 iff every file parses. Standard library only: any python3 runs it."""
import sys
import xml.dom.minidom


def main(paths):
    if not paths:
        print("usage: python3 tests/xml_wellformed.py FILE...", file=sys.stderr)
        return 2
    bad = 0
    for path in paths:
        try:
            xml.dom.minidom.parse(path)
        except Exception as e:  # expat's error, or the file cannot be read
            print(f"{path}: {e}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
