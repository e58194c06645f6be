# The project's documentation stays inside the project (issue 29): no tracked file points at
# the folder beside the clone (the shared notes and spec) except the tests that read recorded
# test vectors through "<repo>/../shared/vectors" (that exact string, only under tests/); and
# every relative link in README.md and docs/*.md (markdown [text](path) and path#anchor) names
# a file or folder inside the repository, its #anchor a heading of the markdown file it names.
# Runs from the repository root, on the tracked files (git ls-files) or, outside a git work
# tree, on every file but build/.
. tests/lib.sh

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files() { git ls-files -z; }
else
	files() { find . -path ./build -prune -o -path ./.git -prune -o -type f -print0 | sed -z 's|^\./||'; }
fi

# The two patterns are spelled so that this file does not match them itself.
outside='\.\./shar[e]d|/work/shar[e]d'
allowed='\.\./shar[e]d/vectors'

t=docs_no_tracked_file_points_outside_the_repository
bad=$(files | while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	grep -IqE "$outside" "$f" 2>/dev/null || continue
	case $f in
	tests/*)
		# in tests: only ../shared/vectors, and no /work/shared at all
		grep -InE "$outside" "$f" | grep -vE "$allowed" | grep -E "$outside" |
			sed "s|^|$f:|" | head -3
		;;
	*) grep -InE "$outside" "$f" | sed "s|^|$f:|" | head -3 ;;
	esac
done)
if [ -z "$bad" ]; then
	pass $t
else
	fail $t "$(printf '%s\n' "$bad" | wc -l) lines name a place outside the repository, first: $(printf '%s\n' "$bad" | head -5 | cut -c1-200 | tr '\n' '|')"
fi

t=docs_every_relative_link_in_readme_and_docs_resolves
docs=(README.md docs/*.md)
out=$(python3 - "${docs[@]}" <<'PY'
import os, re, sys, unicodedata

root = os.path.realpath(".")
link = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
heading = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")

def slug(text):
    # GitHub's heading anchors: markup dropped, lower case, punctuation other than - and _
    # removed, spaces to '-'; repeats get -1, -2, ...
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.replace("`", "").strip().lower()
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-_" or cat[0] in "LN" or cat == "Mn":
            out.append(ch)
        elif ch == " ":
            out.append("-")
    return "".join(out)

anchors_cache = {}
def anchors(path):
    if path not in anchors_cache:
        seen, found, fence = {}, set(), False
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lstrip().startswith("```"):
                    fence = not fence
                    continue
                if fence:
                    continue
                m = heading.match(line)
                if not m:
                    for a in re.findall(r'<a\s+(?:name|id)="([^"]+)"', line):
                        found.add(a)
                    continue
                s = slug(m.group(2))
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else f"{s}-{n}")
        anchors_cache[path] = found
    return anchors_cache[path]

bad = []
for doc in sys.argv[1:]:
    if not os.path.isfile(doc):
        continue
    fence = False
    for no, line in enumerate(open(doc, encoding="utf-8", errors="replace"), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        for target in link.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue  # http:, https:, mailto:
            path, _, anchor = target.partition("#")
            full = os.path.realpath(os.path.join(os.path.dirname(doc), path)) if path else os.path.realpath(doc)
            where = f"{doc}:{no}: ({target})"
            if not (full == root or full.startswith(root + os.sep)):
                bad.append(f"{where} leaves the repository")
            elif not os.path.exists(full):
                bad.append(f"{where} names no file")
            elif anchor and full.endswith(".md") and os.path.isfile(full) and anchor not in anchors(full):
                bad.append(f"{where} names no heading of {os.path.relpath(full, root)}")
print("\n".join(bad))
PY
)
if [ -z "$out" ]; then
	pass "$t (${#docs[@]} files)"
else
	fail $t "$(printf '%s\n' "$out" | wc -l) broken: $(printf '%s\n' "$out" | head -5 | tr '\n' '|')"
fi
