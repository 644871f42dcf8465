"""docs/control-api.md read as a frontend would: every object's table, every method's result and every event's data,
turned into checks of what a running parleyd sends.

A type is written in the document's small grammar (its Shapes section):

    type = base [" or null"] [": " word {", " word} [" or " word]]
    base = "a string" | "an integer" | "a number" | "a boolean" | "a timestamp" | "any JSON value"
         | NOUN | "an array of " PLURAL | "an object of " PLURAL " by name"

    ref = Reference.load()                # docs/control-api.md next to this checkout
    ref.problems(value, "a conversation") # [] when it conforms, else one line per fault
    ref.result_type("status")             # "a status result" (a table of its own) or a named shape
"""
import os
import re
from datetime import datetime

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "control-api.md")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
SCALARS = {"a string": "string", "an integer": "integer", "a number": "number", "a boolean": "boolean",
           "a timestamp": "timestamp", "any JSON value": "json"}
SCALAR_PLURALS = {"strings": "string", "integers": "integer", "numbers": "number", "booleans": "boolean",
                  "timestamps": "timestamp", "JSON values": "json"}


class Shape:
    """One table: member name → type words; `omits` when absent members are left out instead of null."""

    def __init__(self, name, members, omits=False):
        self.name, self.members, self.omits = name, members, omits


def _table(lines, start):
    """The rows of the `| member | type | |` table at or after line `start`: [(member, type)], and where it ends."""
    i = start
    while i < len(lines) and not lines[i].startswith("| member | type |"):
        if lines[i].startswith("#"):
            return None, i
        i += 1
    rows, i = [], i + 2
    while i < len(lines) and lines[i].startswith("|"):
        cells = [c.strip() for c in lines[i].strip().strip("|").split(" | ")]
        rows.append((cells[0].strip("`"), cells[1]))
        i += 1
    return rows, i


class Reference:
    def __init__(self, text):
        self.text = text
        lines = text.split("\n")
        self.shapes, self.plurals, self.results, self.data = {}, {}, {}, {}
        section = None
        for i, line in enumerate(lines):
            if line.startswith("## "):
                section = line[3:].strip()
            elif section == "Shapes" and line.startswith("| ") and not line.startswith("| one |") and " | " in line \
                    and not line.startswith("| member") and "---" not in line and not self.shapes:
                one, several = [c.strip() for c in line.strip().strip("|").split(" | ")]
                self.plurals[several] = one
            elif section == "Shapes" and line.startswith("### "):
                title = line[4:].strip()
                name = title[0].lower() + title[1:]
                rows, end = _table(lines, i + 1)
                note = "\n".join(lines[i + 1:end])
                self.shapes[name] = Shape(name, dict(rows), omits="the rest absent" in note)
            elif section in ("Methods", "Events") and line.startswith("### `"):
                key = line[5:].strip().strip("`")
                target = self.results if section == "Methods" else self.data
                target[key] = self._answer(lines, i + 1, "Result:" if section == "Methods" else "Data:", key)
        self.methods = tuple(self.results)
        self.events = tuple(self.data)

    def _answer(self, lines, start, label, key):
        """A method's result or an event's data: a named shape, or its own table (kept as a shape of its own)."""
        for i in range(start, len(lines)):
            line = lines[i]
            if line.startswith("### ") or line.startswith("## "):
                break
            if line.startswith(label):
                named = re.match(label + r" (an? [^(]+?|[^(]+?) \(see Shapes\)", line)
                if named:
                    return named.group(1).strip()
                rows, _ = _table(lines, i + 1)
                name = f"{key} {label[:-1].lower()}"
                self.shapes[name] = Shape(name, dict(rows))
                return name
        raise ValueError(f"{key}: no {label} in the document")

    @classmethod
    def load(cls, path=DOC):
        with open(path, encoding="utf-8") as f:
            return cls(f.read())

    def result_type(self, method):
        return self.results[method]

    def data_type(self, event):
        return self.data[event]

    # -------------------------------------------------------------------------------------------- checking values

    def problems(self, value, words, path="$"):
        """What is wrong with `value` as the type `words` says, one line per fault."""
        allowed = None
        if ": " in words:
            words, rest = words.split(": ", 1)
            allowed = re.findall(r"`([^`]*)`", rest)
        if words.endswith(" or null"):
            if value is None:
                return []
            words = words[: -len(" or null")]
        return self._base(value, words, allowed, path)

    def _base(self, value, words, allowed, path):
        if words in SCALARS:
            return self._scalar(value, SCALARS[words], allowed, path)
        if words.startswith("an array of "):
            if not isinstance(value, list):
                return [f"{path}: {value!r} is not an array"]
            element = self._singular(words[len("an array of "):])
            return [p for i, v in enumerate(value) for p in self._base(v, element, allowed, f"{path}[{i}]")]
        if words.startswith("an object of ") and words.endswith(" by name"):
            if not isinstance(value, dict):
                return [f"{path}: {value!r} is not an object"]
            element = self._singular(words[len("an object of "):-len(" by name")])
            return [p for k, v in sorted(value.items()) for p in self._base(v, element, allowed, f"{path}.{k}")]
        if words in self.shapes:
            return self._shape(value, self.shapes[words], path)
        return [f"{path}: the document's type {words!r} is not one this reader knows"]

    def _singular(self, plural):
        if plural in SCALAR_PLURALS:
            return {v: k for k, v in SCALARS.items()}[SCALAR_PLURALS[plural]]
        if plural in self.plurals:
            return self.plurals[plural]
        return plural  # reported as unknown by _base

    @staticmethod
    def _scalar(value, kind, allowed, path):
        ok = {"string": isinstance(value, str),
              "integer": isinstance(value, int) and not isinstance(value, bool),
              "number": isinstance(value, (int, float)) and not isinstance(value, bool),
              "boolean": isinstance(value, bool),
              "timestamp": isinstance(value, str) and bool(TIMESTAMP.match(value)) and _parses(value),
              "json": True}[kind]
        if not ok:
            return [f"{path}: {value!r} is not {kind}"]
        if allowed is not None and value not in allowed:
            return [f"{path}: {value!r} is not one of {allowed}"]
        return []

    def _shape(self, value, shape, path):
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not {shape.name}"]
        found = [f"{path}.{k} is sent but not in the table of {shape.name}" for k in sorted(value) if k not in shape.members]
        for member, words in shape.members.items():
            if member not in value:
                if not shape.omits:
                    found.append(f"{path}.{member} is missing ({shape.name})")
                continue
            found += self.problems(value[member], words, f"{path}.{member}")
        return found


def _parses(text):
    try:
        datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
        return True
    except ValueError:
        return False
