"""The words documentation uses for what a developer asks in other words: query expansion for documentation search.

A developer asks to "parse a JSON string", "randomize a list", "get a file's extension" or "allow cross-origin
requests"; the documentation says `loads` and "deserialize", `shuffle`, `suffix`, CORS. BM25 matches words, so
such a question misses the passage that answers it. `expansion` gives, for the words and phrases of a question
found in `THESAURUS`, the documentation's words the question does not already have; the pipeline searches them
with the question's own words, and an API named by one of them counts as named by the question
(`ranking.arrange`).

The table is ours: everyday programming vocabulary, one way only (how questions put it → how reference
documentation and API names put it), general rather than tied to any one library's question. `WITHIN` holds what a
word means within a subject the question names: in a question about regular expressions, "remove" is a substitution
(`sub`), "extract" finding every match (`findall`).
Words are matched as written or plural, not by stem ("settings" is no "set"), phrases word by word in order, a
question's articles and possessives aside ("copy a directory" is "copy directory") and up to two other words between
(`PHRASE_GAP`: "sort a python dictionary by value" is "sort by", "format the current time" "format time").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from almanac.rag.bm25 import tokenize

# asked → documented (each key a word or a phrase; values are words as documentation and API names write them)
THESAURUS: Mapping[str, tuple[str, ...]] = {
    # data formats and conversions
    "parse": ("deserialize", "decode", "load", "loads"),
    "deserialize": ("load", "loads", "decode"),
    "serialize": ("dump", "dumps", "encode"),
    "dictionary": ("dict",),
    "integer": ("int",),
    "boolean": ("bool",),
    "array": ("list", "ndarray"),
    "pretty print": ("pprint", "indent"),
    "pretty": ("indent", "pprint"),
    "binary": ("bytes",),
    # files and paths
    "folder": ("directory", "dir"),
    "extension": ("suffix", "ext"),
    "filename": ("name", "basename"),
    "delete": ("remove", "unlink", "rmtree"),
    "non empty": ("rmtree", "recursively"),
    "recursively": ("rmtree", "copytree", "walk", "rglob"),
    "erase": ("remove", "delete"),
    "rename": ("move", "replace"),
    "temporary": ("temp", "tmp"),
    "scratch": ("temporary", "temp"),
    "working directory": ("cwd", "getcwd"),
    "current directory": ("cwd", "getcwd"),
    "home directory": ("home", "expanduser"),
    "absolute path": ("abspath", "resolve"),
    "relative path": ("relpath", "relative_to"),
    "file size": ("getsize", "st_size"),
    "unzip": ("extract", "extractall"),
    "compress": ("gzip", "zip", "archive", "compression"),
    "line by line": ("readline", "readlines"),
    "ini": ("configparser", "config"),
    "config file": ("configparser", "configuration"),
    "executable": ("which", "exec"),
    "on path": ("which",),
    "script directory": ("dirname", "abspath", "__file__"),
    "folder path": ("dirname", "split"),
    "parent directory": ("dirname", "parent"),
    "everything inside": ("rmtree", "recursively"),
    "create directory": ("mkdir", "makedirs"),
    "create folder": ("mkdir", "makedirs"),
    "not exist": ("exist_ok", "exists"),
    "copy directory": ("copytree",),
    "copy folder": ("copytree",),
    "whole file": ("read", "read_text"),
    "missing directories": ("makedirs", "exist_ok"),
    "intermediate directories": ("makedirs",),
    "list files": ("listdir", "iterdir", "scandir", "glob"),
    "modification time": ("getmtime", "st_mtime"),
    "modified time": ("getmtime", "st_mtime"),
    "metadata": ("copy2", "stat"),
    "move file": ("shutil", "move"),
    "symbolic link": ("symlink", "symlink_to"),
    "permissions": ("chmod", "mode"),
    "disk space": ("disk_usage",),
    "free space": ("disk_usage",),
    # text
    "lowercase": ("lower", "casefold"),
    "uppercase": ("upper",),
    "trim": ("strip",),
    "whitespace": ("strip", "space"),
    "substitute": ("sub", "replace"),
    "replace": ("sub",),
    "special character": ("re", "escape"),
    "non numeric": ("re", "sub", "isdigit"),
    "non alphanumeric": ("re", "sub", "isalnum"),
    "punctuation": ("re", "punctuation"),
    "all matches": ("findall", "finditer"),
    "every match": ("findall", "finditer"),
    "substring": ("find", "index"),
    "bytes to string": ("decode",),
    "string to bytes": ("encode",),
    "bytes to int": ("from_bytes", "unpack", "struct"),
    "bytes to integer": ("from_bytes", "unpack", "struct"),
    "binary to float": ("unpack", "struct"),
    "hex to float": ("unpack", "struct", "fromhex"),
    "int to bytes": ("to_bytes", "pack", "struct"),
    "endian": ("struct", "unpack", "pack", "byteorder"),
    "binary data": ("struct", "unpack", "pack"),
    "integer to bytes": ("to_bytes", "pack", "struct"),
    "list to string": ("join",),
    "reverse": ("reversed",),
    "whole string": ("fullmatch",),
    "entire string": ("fullmatch",),
    "starts with": ("startswith",),
    "ends with": ("endswith",),
    "leading zeros": ("zfill", "rjust"),
    "title case": ("title", "capwords"),
    "fuzzy": ("difflib", "get_close_matches", "ratio"),
    "did you mean": ("close", "get_close_matches"),
    "mistyped": ("close", "get_close_matches"),
    "typo": ("close", "get_close_matches"),
    "accents": ("unicodedata", "normalize"),
    "regular expression": ("re", "pattern"),
    "regex": ("re",),
    "regexp": ("re",),
    "wildcard": ("glob", "fnmatch", "pattern"),
    "concatenate": ("join", "concat", "chain"),
    "similar": ("close", "similarity", "ratio"),
    "similarity": ("ratio", "close", "sequencematcher"),
    "closest": ("close", "nearest"),
    "wrap": ("textwrap", "fill"),
    "indentation": ("indent", "dedent"),
    "string representation": ("literal_eval", "repr"),
    "hex": ("fromhex", "unhexlify"),
    "non ascii": ("encode", "ascii", "normalize"),
    # collections
    "randomize": ("shuffle", "random"),
    "random order": ("shuffle",),
    "unique": ("set", "distinct"),
    "duplicates": ("unique", "set"),
    "frequency": ("count", "counter"),
    "occurrences": ("count", "counter"),
    "flatten": ("chain", "from_iterable"),
    "flat list": ("chain", "from_iterable"),
    "consecutive": ("groupby", "pairwise"),
    "adjacent": ("groupby", "pairwise"),
    "largest": ("max", "nlargest"),
    "smallest": ("min", "nsmallest"),
    "biggest": ("largest", "max", "nlargest"),
    "lowest": ("smallest", "min", "nsmallest"),
    "top n": ("nlargest", "heapq"),
    "combination": ("combinations", "product", "permutations"),
    "cartesian product": ("product",),
    "merge": ("update", "union", "chain"),
    "combine": ("chain", "union", "update"),
    "priority queue": ("heapq", "heap"),
    "pairs": ("pairwise", "zip"),
    "record": ("namedtuple", "dataclass"),
    "named fields": ("namedtuple",),
    "immutable": ("frozen", "readonly"),
    "read only": ("frozen", "readonly"),
    "enumeration": ("enum",),
    "both ends": ("deque",),
    "double ended": ("deque",),
    "keep order": ("fromkeys", "ordereddict"),
    "preserve order": ("fromkeys", "ordereddict"),
    "insertion order": ("fromkeys", "ordereddict"),
    "batches": ("batched", "islice"),
    "group by": ("groupby",),
    "sliding window": ("pairwise", "deque", "islice"),
    "how often": ("counter", "count"),
    "word count": ("counter", "count"),
    "missing key": ("defaultdict", "get", "setdefault"),
    "transpose": ("zip",),
    "sort by": ("key", "itemgetter", "attrgetter", "sorted"),
    "with index": ("enumerate",),
    "increment": ("incr", "incrby"),
    "by value": ("items", "itemgetter"),
    "keys and values": ("items",),
    # time
    "current": ("now", "today"),
    "epoch": ("timestamp", "unix"),
    "unix time": ("timestamp",),
    "days ago": ("timedelta",),
    "days": ("timedelta",),
    "hours": ("timedelta",),
    "weeks": ("timedelta",),
    "yesterday": ("timedelta", "today"),
    "tomorrow": ("timedelta", "today"),
    "week number": ("isocalendar", "weekday"),
    "duration": ("timedelta",),
    "difference between dates": ("timedelta",),
    "iso": ("isoformat", "fromisoformat"),
    "timezone": ("tz", "tzinfo", "utc"),
    "utc": ("timezone", "astimezone"),
    "date string": ("strptime", "fromisoformat"),
    "format date": ("strftime", "isoformat"),
    "format time": ("strftime",),
    "day of week": ("weekday", "isoweekday"),
    "pause": ("sleep",),
    "delay": ("sleep", "call_later"),
    "measure": ("timeit", "perf_counter"),
    "elapsed": ("perf_counter", "monotonic"),
    "schedule": ("sched", "timer", "call_later"),
    # processes, concurrency, the system
    "shell command": ("subprocess", "run", "shell"),
    "shell script": ("subprocess", "run", "call"),
    "bash": ("subprocess", "shell"),
    "external program": ("subprocess", "run", "popen"),
    "child process": ("subprocess", "popen"),
    "exit status": ("returncode",),
    "exit program": ("sys", "exit"),
    "exit script": ("sys", "exit"),
    "background process": ("subprocess", "popen"),
    "pipe": ("subprocess", "popen"),
    "command output": ("check_output", "capture_output"),
    "capture output": ("check_output", "capture_output"),
    "quit": ("exit",),
    "abort": ("exit", "abort"),
    "simultaneously": ("thread", "concurrent", "parallel"),
    "terminal": ("console", "shell"),
    "exit code": ("returncode", "status"),
    "kill": ("terminate", "kill", "signal"),
    "sigterm": ("signal",),
    "sigint": ("signal",),
    "give up": ("timeout", "wait_for"),
    "stack trace": ("traceback", "print_exc", "format_exc"),
    "stacktrace": ("traceback", "print_exc", "format_exc"),
    "concurrently": ("gather", "concurrent", "parallel"),
    "parallel": ("concurrent", "pool", "gather"),
    "limit concurrency": ("semaphore",),
    "concurrency limit": ("semaphore",),
    "same time": ("concurrently", "semaphore"),
    "background": ("thread", "task", "daemon"),
    "mutex": ("lock",),
    "race condition": ("lock",),
    "losing updates": ("lock",),
    "synchronous": ("sync",),
    "asynchronous": ("async",),
    "await": ("async",),
    "thread safe": ("lock",),
    "threads safely": ("lock",),
    "thread pool": ("threadpoolexecutor", "executor", "threadpool"),
    "process pool": ("processpoolexecutor", "pool", "executor"),
    "blocking code": ("to_thread", "run_in_executor"),
    "producer": ("queue",),
    "consumer": ("queue",),
    "wait for all": ("gather", "wait"),
    "first completed": ("first_completed", "wait", "as_completed"),
    "periodically": ("timer", "sleep", "schedule"),
    "operating system": ("os", "platform", "system"),
    "cpu": ("cpu_count", "processor"),
    "environment variable": ("environ", "getenv"),
    "env var": ("environ", "getenv"),
    "env file": ("dotenv", "load_dotenv"),
    "memory usage": ("memory_info", "rss", "getsizeof"),
    # the web
    "cross origin": ("cors",),
    "download": ("retrieve", "urlretrieve", "fetch"),
    "upload": ("files", "post", "multipart"),
    "form data": ("data", "post", "urlencoded"),
    "host": ("netloc", "hostname"),
    "query string": ("urlencode", "query", "params"),
    "url encode": ("quote", "urlencode"),
    "url decode": ("unquote", "parse_qs"),
    "urlencode": ("quote", "quote_plus"),
    "percent encode": ("quote", "urlencode"),
    "escape": ("quote", "escape"),
    "status code": ("status_code", "raise_for_status"),
    "http error": ("raise_for_status", "httperror", "httpstatuserror"),
    # an HTTP status by its number: the web frameworks' exception carrying a status code
    **dict.fromkeys(("400", "401", "403", "404", "409", "422", "500"), ("http", "exception", "status_code")),
    "server sent events": ("sse", "eventsource"),
    "streaming": ("stream",),
    "token by token": ("stream",),
    "request body": ("body", "basemodel"),
    "file upload": ("uploadfile", "file"),
    "startup": ("lifespan", "on_event"),
    "shutdown": ("lifespan", "on_event"),
    "cookie": ("cookies", "set_cookie"),
    "dependency injection": ("depends",),
    "background task": ("backgroundtasks", "add_task"),
    "static files": ("staticfiles",),
    "bearer token": ("httpbearer", "authorization"),
    "query parameters": ("parse_qs", "params", "query"),
    "ip address": ("ipaddress", "ip_address"),
    "http request": ("request", "urlopen", "get"),
    "subnet": ("ipaddress", "ip_network"),
    # databases
    "foreign key": ("foreignkey",),
    "one to many": ("relationship",),
    "many to one": ("relationship",),
    "many to many": ("relationship", "secondary"),
    "primary key": ("primary_key",),
    "database url": ("create_engine", "url"),
    "connection string": ("create_engine", "url", "dsn"),
    "transaction": ("begin", "commit"),
    "many rows": ("executemany", "bulk"),
    "bulk insert": ("executemany", "bulk"),
    "thousands of rows": ("executemany", "bulk"),
    "upsert": ("on_conflict_do_update", "merge"),
    "postgres": ("postgresql",),
    "send email": ("smtplib", "smtp", "send_message"),
    "attach": ("attachment", "add_attachment"),
    "browser": ("webbrowser",),
    # checks, errors, tests, tooling
    "validate": ("validator", "validation"),
    "traceback": ("exc_info", "exception"),
    "throw": ("raise",),
    "mock": ("patch", "mock"),
    "fake": ("mock", "patch"),
    "log level": ("setlevel", "getlogger"),
    "progress bar": ("progress", "tqdm", "progressbar"),
    "checksum": ("hash", "digest"),
    "hash": ("digest", "hashlib"),
    "password": ("secrets", "token", "hash"),
    "secure random": ("secrets", "token"),
    "cache": ("lru_cache", "cache", "memoize"),
    "memoize": ("cache", "lru_cache"),
    "already computed": ("cache", "lru_cache"),
    "remember results": ("cache", "lru_cache"),
    "encrypt": ("fernet", "cipher", "encrypt"),
    "symmetric": ("fernet",),
    "timing attack": ("compare_digest",),
    "unique id": ("uuid", "uuid4"),
    "computed": ("computed_field", "property"),
    "derived": ("computed_field", "property"),
    "several inputs": ("parametrize",),
    "multiple inputs": ("parametrize",),
    "expected to fail": ("xfail",),
    "skip test": ("skip", "skipif"),
    "expect exception": ("raises",),
    "warnings into errors": ("simplefilter", "filterwarnings"),
    "ignore warnings": ("filterwarnings", "simplefilter", "catch_warnings"),
    "suppress warnings": ("filterwarnings", "simplefilter", "catch_warnings"),
    "ignore exception": ("suppress",),
    "on exit": ("atexit",),
    "preserve metadata": ("wraps",),
    "abstract method": ("abc", "abstractmethod"),
    "abstract class": ("abc", "abstractmethod"),
    "interface": ("protocol", "abc"),
    "generic": ("typevar", "generic"),
    "save object": ("pickle", "dump"),
    "terminal size": ("get_terminal_size",),
    "user input": ("input", "prompt"),
    "hidden input": ("getpass", "hide_input"),
    "weighted": ("choices", "weights"),
    "random element": ("choice",),
    "random item": ("choice",),
    "random number": ("randint", "uniform"),
    "log to file": ("filehandler", "basicconfig"),
    "log format": ("formatter", "basicconfig"),
    "compare versions": ("packaging", "version"),
    "version string": ("packaging", "version"),
    "command line": ("argument", "option", "cli"),
    "flag": ("option", "store_true"),
    "only accept": ("choice", "choices"),
    "subcommand": ("subparsers", "subparser", "group"),
    "signature": ("parameters", "inspect"),
    "parameter names": ("signature", "parameters"),
    "every error": ("iter_errors",),
    "all errors": ("iter_errors",),
    "test endpoints": ("testclient",),
    "without starting server": ("testclient",),
    "type hint": ("typing", "annotation"),
    "nullable": ("optional", "none"),
    "camelcase": ("alias", "alias_generator"),
    "camel case": ("alias", "alias_generator"),
    "string type": ("str", "isinstance"),
    "type of": ("type", "isinstance"),
    "instance of": ("isinstance",),
    "type check": ("isinstance",),
    "callback": ("callable",),
    "square root": ("sqrt",),
    "round up": ("ceil",),
    "decimal places": ("round", "quantize"),
    "round down": ("floor",),
    "nan": ("isnan",),
    "thousands separator": ("format", "grouping", "locale"),
    "average": ("mean",),
    "tolerance": ("isclose",),
    "approximately equal": ("isclose",),
    "standard deviation": ("stdev", "std"),
    "rational": ("fraction",),
}

# Within a subject, what the question asks to do is that subject's operation: in a question about regular
# expressions, "remove", "delete" or "insert" is a substitution (`re.sub`: "Regex for removing data in parenthesis",
# "Delete digits (Regex)") and "extract" or "all" finding every match (`re.findall`), which no word of theirs says.
# subject (words, any of which says the question is about it) → asked → documented, matched as `THESAURUS` is
WITHIN: Mapping[tuple[str, ...], Mapping[str, tuple[str, ...]]] = {
    ("regex", "regexp", "regular expression"): {
        "remove": ("sub",),
        "delete": ("sub",),
        "strip": ("sub",),
        "erase": ("sub",),
        "eliminate": ("sub",),
        "insert": ("sub",),
        "add": ("sub",),
        "clean": ("sub",),
        "extract": ("findall",),
        "capture": ("findall",),
        "all": ("findall",),
        "every": ("findall",),
    },
}


_WORD = re.compile(r"[a-z0-9]+")
# words a phrase of the table never has: "copy a directory" and "copy the directory" are "copy directory"
_ARTICLES = frozenset({"a", "an", "the", "my", "your", "our", "their", "its", "this", "that", "these", "those", "some"})
# a name written as code (`parse_obj`, `json.loads`): its parts are the API's, not the question's words ("NaN" and
# other capitals stay words)
_CODE = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b|\b\w*_\w*\b")


def _words(text: str) -> list[str]:
    """Lower-case words, hyphens and underscores apart ("cross-origin" → cross, origin)."""
    return _WORD.findall(text.lower())


def _same(asked: str, written: str) -> bool:
    """Whether a question's word is a table word, its plural or a form of the verb ("duplicates" for "duplicate",
    "encoding" and "encoded" for "encode"; a table's plural for the question's singular too)."""
    if written == asked or asked in (written + "s", written + "es"):
        return True
    stem = asked[:-1] if asked.endswith("e") else asked
    return written in (asked + "s", asked + "es", asked + "d", asked + "ed", stem + "ing", stem + "ed")


_ENTRIES = [(_words(asked), documented) for asked, documented in THESAURUS.items()]
_WITHIN = [
    ([_words(word) for word in subject], [(_words(asked), documented) for asked, documented in table.items()])
    for subject, table in WITHIN.items()
]


def expansion(question: str) -> list[str]:
    """The documentation's words for the words and phrases of `question` in `THESAURUS` (as written, plural or a
    verb's form: `_same`) that the question does not already have (by stem), in the table's order, each once; and
    those of `WITHIN`'s table for a subject the question names ("remove … with a regex" → `sub`). A name
    the question writes as code is no words of its own ("parse_obj" asks for that API, not for parsing)."""
    words = [word for word in _words(_CODE.sub(" ", question)) if word not in _ARTICLES]
    have = set(tokenize(question))
    found: dict[str, None] = {}
    entries = [
        *_ENTRIES,
        *(entry for subject, table in _WITHIN if any(_has(words, s) for s in subject) for entry in table),
    ]
    for asked, documented in entries:
        if _has(words, asked):
            found.update((word, None) for word in documented if not set(tokenize(word)) <= have)
    return list(found)


PHRASE_GAP = 2  # other words a question may have between two words of a phrase ("sort a dictionary by value")


def _has(words: list[str], phrase: list[str]) -> bool:
    """Whether the question's `words` have a table's `phrase`: its words in order (`_same`), with at most
    `PHRASE_GAP` other words between each two ("sort a python dictionary by value" has "sort by", "round a float up"
    "round up"; "trace the stack" is no "stack trace")."""

    def rest(after: int, k: int) -> bool:
        if k == len(phrase):
            return True
        window = range(after, min(len(words), after + PHRASE_GAP + 1))
        return any(_same(phrase[k], words[j]) and rest(j + 1, k + 1) for j in window)

    return any(_same(phrase[0], word) and rest(i + 1, 1) for i, word in enumerate(words))
