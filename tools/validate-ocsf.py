#!/usr/bin/env python3
"""Validates OCSF events (JSON Lines) against the class definitions of a
fixture made by tools/ocsf-fixture.py from the published OCSF schema.

    tools/validate-ocsf.py FIXTURE FILE... [--recommended]

Checks each event as the schema's validator does: the class exists; every
attribute is one of the class's or object's (profile attributes only when
metadata.profiles lists the profile); required attributes and object
constraints (at_least_one, just_one) hold; each value has its dictionary
type (strings, integers, timestamps, objects, arrays, ranges, enums);
no deprecated attribute is used; type_uid, category_uid, metadata.version
agree; each observable names an attribute of the event that has that
value. With --recommended, missing recommended attributes are reported too
(one line per class and attribute). Prints one line per problem and then
"N events, N errors"; exits 1 when there is an error.
"""
import json
import re
import sys

errors = []


def err(where, msg):
    errors.append(f"{where}: {msg}")


def base_type(fx, t):
    seen = t
    while t in fx["types"] and fx["types"][t].get("type"):
        t = fx["types"][t]["type"]
    return t, fx["types"].get(seen, {})


def check_value(fx, path, spec, v, profiles, missing_rec):
    t = spec["type"]
    if spec.get("is_array"):
        if not isinstance(v, list):
            return err(path, f"{t} array expected, got {type(v).__name__}")
        for i, x in enumerate(v):
            check_scalar(fx, f"{path}[{i}]", spec, x, profiles, missing_rec)
        return
    check_scalar(fx, path, spec, v, profiles, missing_rec)


def check_scalar(fx, path, spec, v, profiles, missing_rec):
    t = spec["type"]
    if t == "object":  # the generic object (unmapped): any members
        return None if isinstance(v, dict) else err(path, "object expected")
    if t in fx["objects"]:
        if not isinstance(v, dict):
            return err(path, f"object {t} expected")
        return check_object(fx, path, fx["objects"][t], v, profiles, missing_rec, t)
    b, info = base_type(fx, t)
    if b == "string_t":
        if not isinstance(v, str):
            return err(path, f"{t} (string) expected, got {json.dumps(v)[:60]}")
        if info.get("max_len") and len(v) > info["max_len"]:
            err(path, f"{t} longer than {info['max_len']}")
        if info.get("regex") and t != "ip_t" and not re.search(info["regex"], v):
            err(path, f"{t} does not match its pattern: {v[:60]}")
    elif b in ("integer_t", "long_t"):
        if not isinstance(v, int) or isinstance(v, bool):
            return err(path, f"{t} (integer) expected, got {json.dumps(v)[:60]}")
        if b == "integer_t" and not -2**31 <= v < 2**31:
            err(path, f"{v} does not fit integer_t")
        r = info.get("range")
        if r and not r[0] <= v <= r[1]:
            err(path, f"{v} outside {r}")
    elif b == "float_t":
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            err(path, f"{t} (number) expected")
    elif b == "boolean_t":
        if not isinstance(v, bool):
            err(path, "boolean expected")
    elif b == "json_t":
        pass
    else:
        err(path, f"unknown type {t}")
    # (the schema's compiler fills the enums of class_uid and category_uid
    # with every class; check_event compares them with the class instead)
    if "enum" in spec and v not in spec["enum"] and \
            path.rsplit(".", 1)[-1] not in ("class_uid", "category_uid"):
        err(path, f"{v} is not one of the enum's values {spec['enum'][:12]}")


def check_attrs(fx, where, attrs, obj, profiles, missing_rec, kind):
    for k, v in obj.items():
        spec = attrs.get(k)
        if spec is None or (spec.get("profile") and spec["profile"] not in profiles):
            err(where, f"'{k}' is not an attribute of {kind}")
            continue
        if spec.get("deprecated"):
            err(where, f"'{k}' is deprecated since OCSF {spec['deprecated']}")
        if v is None:
            continue
        check_value(fx, f"{where}.{k}", spec, v, profiles, missing_rec)
    for k, spec in attrs.items():
        if spec.get("profile") and spec["profile"] not in profiles:
            continue
        if k not in obj or obj[k] is None:
            if spec["requirement"] == "required":
                err(where, f"required '{k}' missing in {kind}")
            elif spec["requirement"] == "recommended":
                missing_rec.add(f"{kind}.{k}")


def check_object(fx, where, o, obj, profiles, missing_rec, name):
    check_attrs(fx, where, o["attributes"], obj, profiles, missing_rec, name)
    c = o.get("constraints") or {}
    if c.get("at_least_one") and not any(obj.get(k) is not None for k in c["at_least_one"]):
        err(where, f"{name} needs at least one of {c['at_least_one']}")
    if c.get("just_one") and sum(obj.get(k) is not None for k in c["just_one"]) != 1:
        err(where, f"{name} needs exactly one of {c['just_one']}")


def lookup(ev, path):
    o = ev
    for part in path.split("."):
        if isinstance(o, list):
            return [x.get(part) for x in o if isinstance(x, dict)]
        if not isinstance(o, dict) or part not in o:
            return None
        o = o[part]
    return o


def check_event(fx, where, ev, missing_rec):
    cls = fx["classes"].get(str(ev.get("class_uid")))
    if not cls:
        return err(where, f"class_uid {ev.get('class_uid')} is not in the fixture")
    profiles = set((ev.get("metadata") or {}).get("profiles") or [])
    check_attrs(fx, where, cls["attributes"], ev, profiles, missing_rec, cls["name"])
    if ev.get("category_uid") != cls["category_uid"]:
        err(where, f"category_uid {ev.get('category_uid')}, class says {cls['category_uid']}")
    if isinstance(ev.get("activity_id"), int) and \
            ev.get("type_uid") != ev["class_uid"] * 100 + ev["activity_id"]:
        err(where, f"type_uid {ev.get('type_uid')} is not class_uid * 100 + activity_id")
    if (ev.get("metadata") or {}).get("version") != fx["ocsf_version"]:
        err(where, f"metadata.version {(ev.get('metadata') or {}).get('version')}, "
            f"fixture is {fx['ocsf_version']}")
    for i, ob in enumerate(ev.get("observables") or []):
        got = lookup(ev, ob.get("name", ""))
        if got is None:
            err(where, f"observables[{i}] names '{ob.get('name')}', not in the event")
        elif ob.get("value") is not None and ob["value"] != str(got) and \
                not (isinstance(got, list) and ob["value"] in map(str, got)):
            err(where, f"observables[{i}] value {ob['value']!r} is not {ob.get('name')}")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) < 2:
        sys.exit(__doc__)
    fx = json.load(open(args[0]))
    n = 0
    missing_rec = set()
    for f in args[1:]:
        for i, line in enumerate(open(f, encoding="utf-8"), 1):
            if not line.strip():
                continue
            n += 1
            try:
                ev = json.loads(line)
            except ValueError as e:
                err(f"{f}:{i}", f"not JSON: {e}")
                continue
            check_event(fx, f"{f}:{i}", ev, missing_rec)
    for e in errors[:50]:
        print(e)
    if "--recommended" in sys.argv:
        for m in sorted(missing_rec):
            print(f"recommended missing: {m}")
    print(f"{n} events, {len(errors)} errors (OCSF {fx['ocsf_version']})")
    sys.exit(1 if errors or not n else 0)


main()
