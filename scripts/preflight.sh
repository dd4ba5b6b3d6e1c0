#!/bin/sh
# Check, before `make demo`, `make test` or `make lock` runs anything, that what its steps need
# is here; on the first thing missing print ONE line `error: <what is missing>: <how to get it>`
# and exit 1. Nothing is installed, fetched or written.
#
# Usage: PYTHON=python3.11 LOCK=requirements/lock.txt \
#            scripts/preflight.sh [--compilers] [--chromium] [--libssl11 DIR] [STAMP...]
#
# An install is due when no STAMP is given or a STAMP is missing or older than pyproject.toml
# or the lock (the Makefile's rule). Always: $PYTHON exists and is Python >= 3.11. When an
# install is due: its venv module works (ensurepip), the package registry answers (pip's index
# URL from PIP_INDEX_URL or pip.conf, 10 s), and with --compilers gcc, g++ and Python.h are
# here (hnswlib builds from source). So a re-run with every stamp fresh works offline.
# --chromium: chromium is installed or apt-get can install it (the Makefile's `browser`).
# --libssl11 DIR: OpenSSL 1.1 is in DIR or can be fetched (scripts/fetch_libssl11.sh --check).
set -u
case $0 in */*) ROOT=${0%/*}/.. ;; *) ROOT=.. ;; esac
PYTHON=${PYTHON:-python3.11}
LOCK=${LOCK:-$ROOT/requirements/lock.txt}
COMPILERS= CHROMIUM= LIBSSL11=
while [ $# -gt 0 ]; do
    case $1 in
        --compilers) COMPILERS=1 ;;
        --chromium) CHROMIUM=1 ;;
        --libssl11) LIBSSL11=${2:?--libssl11 needs a folder}; shift ;;
        *) break ;;
    esac
    shift
done

fail() {
    echo "error: $1" >&2
    exit 1
}

due=
[ $# -eq 0 ] && due=1
for stamp in "$@"; do
    if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ] || [ "$LOCK" -nt "$stamp" ]; then
        due=1
    fi
done

command -v "$PYTHON" >/dev/null 2>&1 ||
    fail "$PYTHON not found: install Python 3.11 (Debian/Ubuntu: apt-get install python3.11 python3.11-venv) or run make PYTHON=/path/to/python3.11"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null ||
    fail "$PYTHON is not Python 3.11 or newer: install Python 3.11 (Debian/Ubuntu: apt-get install python3.11 python3.11-venv) or run make PYTHON=/path/to/python3.11"

if [ -n "$due" ]; then
    "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null ||
        fail "$PYTHON has no working venv module (ensurepip is missing): apt-get install python3.11-venv"
    if [ -n "$COMPILERS" ]; then
        for cc in gcc g++; do
            command -v "$cc" >/dev/null 2>&1 ||
                fail "$cc not found (hnswlib compiles from source during the install): apt-get install $cc"
        done
        "$PYTHON" -c 'import os, sys, sysconfig
sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' ||
            fail "Python.h (the headers of $PYTHON) not found (hnswlib compiles against them): apt-get install python3.11-dev"
    fi
    # One line on stdout unless the registry serves pip's page; the URL's password never shown.
    why=$("$PYTHON" - <<'EOF'
import base64, configparser, os, ssl, sys, urllib.error, urllib.parse, urllib.request

cfg = configparser.ConfigParser(interpolation=None)
for path in ("/etc/pip.conf", "/etc/xdg/pip/pip.conf", "~/.pip/pip.conf",
             "~/.config/pip/pip.conf", os.environ.get("PIP_CONFIG_FILE", "")):
    try:
        cfg.read(os.path.expanduser(path), encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as e:
        print(f"{path} is not a valid pip configuration file ({type(e).__name__}): fix it or "
              "move it away (pip reads it too)")
        sys.exit(0)

def setting(key, default=""):
    env = os.environ.get("PIP_" + key.upper().replace("-", "_"))
    if env:
        return env
    for section in ("install", "global"):
        if cfg.has_option(section, key):
            return cfg.get(section, key)
    return default

if setting("no-index").strip().lower() in ("1", "true", "yes", "on"):
    sys.exit(0)
parts = urllib.parse.urlsplit((setting("index-url").split() or ["https://pypi.org/simple"])[0])
user, password = parts.username, parts.password
parts = parts._replace(netloc=parts.netloc.rpartition("@")[2])  # credentials go in a header
url = parts.geturl().rstrip("/") + "/pip/"  # a small page every index has
shown = url
if parts.scheme == "file":
    if not os.path.isdir(urllib.request.url2pathname(parts.path)):
        print(f"the package index folder {parts.path} does not exist: point PIP_INDEX_URL "
              "(or index-url in pip.conf) at a Python package index")
    sys.exit(0)

def redact(text):
    if password:
        text = text.replace(password, "***").replace(urllib.parse.unquote(password), "***")
    return text

request = urllib.request.Request(url)  # the body is not read
if user is not None:
    token = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password or '')}"
    request.add_header("Authorization", "Basic " + base64.b64encode(token.encode()).decode())
cert = setting("cert") or None
if cert and not os.path.isfile(cert):
    print(f"the certificate bundle {cert} (PIP_CERT or cert in pip.conf) does not exist: "
          "point it at your CA bundle, e.g. /etc/ssl/certs/ca-certificates.crt")
    sys.exit(0)
try:
    ctx = ssl.create_default_context(cafile=cert)
    urllib.request.urlopen(request, timeout=10, context=ctx).close()
except urllib.error.HTTPError as e:
    if e.code in (401, 403, 407):
        print(f"the package registry {shown} refuses access (HTTP {e.code}): check the "
              "credentials in PIP_INDEX_URL or pip.conf, or the proxy's")
    else:
        print(f"the package registry {shown} answers HTTP {e.code}, not pip's page: point "
              "PIP_INDEX_URL (or index-url in pip.conf) at a Python package index")
except Exception as e:
    reason = redact(str(getattr(e, "reason", e)))
    print(f"the package registry {shown} does not answer ({reason}): check the network or the "
          "proxy (HTTPS_PROXY), or point PIP_INDEX_URL at a reachable mirror")
EOF
)
    [ -z "$why" ] || fail "$why"
fi

if [ -n "$CHROMIUM" ] && ! command -v chromium >/dev/null 2>&1 &&
        ! command -v chromium-browser >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 ||
        fail "chromium not found (the report and judging browser tests drive it) and apt-get is not here to install it: install Chromium with your system's package manager"
    [ "$(id -u)" = 0 ] ||
        fail "chromium not found (the report and judging browser tests drive it): sudo apt-get install chromium"
fi

if [ -n "$LIBSSL11" ]; then
    "$ROOT/scripts/fetch_libssl11.sh" --check "$LIBSSL11" || exit 1
fi
exit 0
