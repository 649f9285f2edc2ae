#!/usr/bin/env python3
"""Compiles the OCSF schema's own class definitions into the fixture that
tests/host/test_fleet.sh validates bpfbox's OCSF output against.

    tools/ocsf-fixture.py GIT_DIR REF CLASS_UID... > tests/fixtures/ocsf-<ver>.json

GIT_DIR is a clone of the OCSF schema's source repository (ocsf-schema on
GitHub), REF a release tag (1.8.0). It reads the schema's source files at REF
(events/, objects/, profiles/, includes/, dictionary.json, categories.json)
and does what the schema's compiler does for the named classes: follows
"extends" of classes and objects, merges "$include"d files and profiles,
takes each attribute's type, array-ness, enum and deprecation from the
dictionary and its requirement and overrides from the class or object.
The output keeps only what validation needs, for the classes named and
every object they reach. The schema cannot be fetched by the tests (no
network); regenerate the fixture when moving to a new OCSF release.
"""
import json
import subprocess
import sys


def git_json(gitdir, ref, path):
    out = subprocess.run(["git", "--git-dir", gitdir, "show", f"{ref}:{path}"],
                         check=True, capture_output=True).stdout
    return json.loads(out)


def git_files(gitdir, ref, folder):
    out = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "-r", "--name-only", ref,
                          folder], check=True, capture_output=True, text=True).stdout
    return [p for p in out.split() if p.endswith(".json")]


def merge_attr(base, over):
    out = dict(base)
    for k, v in over.items():
        if k == "enum" and isinstance(v, dict) and isinstance(out.get("enum"), dict):
            e = dict(out["enum"])
            e.update(v)
            out["enum"] = e
        else:
            out[k] = v
    return out


class Schema:
    def __init__(self, gitdir, ref):
        self.g, self.ref = gitdir, ref
        self.dictionary = git_json(gitdir, ref, "dictionary.json")
        self.categories = git_json(gitdir, ref, "categories.json")["attributes"]
        self.events = {}
        for p in git_files(gitdir, ref, "events"):
            d = git_json(gitdir, ref, p)
            self.events[d["name"]] = d
        self.objects = {}
        for p in git_files(gitdir, ref, "objects"):
            d = git_json(gitdir, ref, p)
            self.objects[d["name"]] = d
        self.version = git_json(gitdir, ref, "version.json")["version"]

    def own_attrs(self, d):
        attrs = {}
        inc = d.get("attributes", {}).get("$include", [])
        for p in [inc] if isinstance(inc, str) else inc:
            f = git_json(self.g, self.ref, p)
            for k, v in self.own_attrs(f).items():
                if f.get("meta") == "profile" and k not in attrs:
                    # Only in events that list the profile in metadata.profiles.
                    v = dict(v, profile=f["name"])
                attrs[k] = merge_attr(attrs.get(k, {}), v)
        for k, v in d.get("attributes", {}).items():
            if k != "$include":
                # (a class that redefines an attribute of a profile keeps it
                # in that profile unless it says "profile": null)
                attrs[k] = merge_attr(attrs.get(k, {}), v)
        return attrs

    def flatten(self, table, name):
        d = table[name]
        attrs = self.flatten(table, d["extends"]) if d.get("extends") else {}
        attrs = {k: dict(v) for k, v in attrs.items()}
        for k, v in self.own_attrs(d).items():
            attrs[k] = merge_attr(attrs.get(k, {}), v)
        return attrs

    def constraints(self, table, name):
        d = table[name]
        c = d.get("constraints")
        if c is None and d.get("extends"):
            return self.constraints(table, d["extends"])
        return c or {}

    def resolve(self, attrs):
        """Dictionary entry under the class's or object's overrides."""
        out = {}
        dic = self.dictionary["attributes"]
        for k, over in attrs.items():
            a = merge_attr(dic.get(k, {}), over)
            if k not in dic and "type" not in over:
                raise SystemExit(f"attribute {k} is in no dictionary")
            r = {"type": a["type"], "requirement": a.get("requirement", "optional")}
            if a.get("is_array"):
                r["is_array"] = True
            if a.get("profile"):
                r["profile"] = a["profile"]
            if isinstance(a.get("enum"), dict):
                keys = list(a["enum"])
                num = all(x.lstrip("-").isdigit() for x in keys)
                r["enum"] = sorted(int(x) for x in keys) if num else sorted(keys)
            if a.get("@deprecated"):
                r["deprecated"] = a["@deprecated"].get("since", True)
            out[k] = r
        return out


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    s = Schema(sys.argv[1], sys.argv[2])
    commit = subprocess.run(["git", "--git-dir", sys.argv[1], "rev-parse",
                             sys.argv[2] + "^{commit}"], check=True, capture_output=True,
                            text=True).stdout.strip()
    types = {}
    for k, v in s.dictionary["types"]["attributes"].items():
        types[k] = {x: v[x] for x in ("type", "range", "max_len", "regex", "values") if x in v}
    fixture = {
        "ocsf_version": s.version,
        "source": f"ocsf-schema {sys.argv[2]} (commit {commit}), tools/ocsf-fixture.py",
        "types": types, "classes": {}, "objects": {},
    }
    want = {int(x) for x in sys.argv[3:]}
    todo = []
    for name, d in s.events.items():
        if "uid" not in d or "category" not in d and not d.get("extends"):
            continue
        cat = d.get("category")
        parent = d
        while not cat and parent.get("extends"):
            parent = s.events[parent["extends"]]
            cat = parent.get("category")
        if cat not in s.categories:
            continue
        cat_uid = s.categories[cat]["uid"]
        uid = cat_uid * 1000 + d["uid"]
        if uid not in want:
            continue
        attrs = s.resolve(s.flatten(s.events, name))
        fixture["classes"][str(uid)] = {"name": name, "caption": d["caption"],
                                        "category_uid": cat_uid, "attributes": attrs}
        todo += [a["type"] for a in attrs.values()]
    missing = want - {int(x) for x in fixture["classes"]}
    if missing:
        sys.exit(f"classes not in the schema: {sorted(missing)}")
    # observable.type_id: its enum is generated from the "observable" ids of
    # the dictionary's types and attributes and of the objects, as the
    # schema's compiler does.
    obs = {0, 99}
    for table in (s.dictionary["types"]["attributes"], s.dictionary["attributes"], s.objects):
        obs |= {v["observable"] for v in table.values() if isinstance(v.get("observable"), int)}
    fixture["observable_type_ids"] = sorted(obs)
    while todo:
        t = todo.pop()
        if t.endswith("_t") or t in fixture["objects"]:
            continue
        attrs = s.resolve(s.flatten(s.objects, t))
        if t == "observable":
            attrs["type_id"]["enum"] = sorted(obs)
        fixture["objects"][t] = {"attributes": attrs,
                                 "constraints": s.constraints(s.objects, t)}
        todo += [a["type"] for a in attrs.values()]
    json.dump(fixture, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


main()
