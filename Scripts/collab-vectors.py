#!/usr/bin/env python3
"""Test vectors for Parley's collaboration identity proof, format v1: an implementation independent of the Swift one.

Needs Python 3.8+ and the `cryptography` package (Debian's python3-cryptography 38 is enough; only APIs that exist
in 38 are used). Nothing here is shared with the Swift sources: the Swift tests read the JSON this writes, and this
script checks JSON that another implementation writes.

Format v1
  Device key    ECDSA P-256 (secp256r1); publicKey = 65-byte X9.63 uncompressed point 0x04 || X || Y.
  Identity      a person's devices form a Merkle tree: leaf = SHA-256(publicKey); the leaves are sorted ascending
                (bytewise) and duplicates removed; node = SHA-256(left || right); on a level with an odd count the
                last node is paired with itself. One leaf: the root is that leaf (and its proof has no hashes).
  Proof         (publicKey, publicKeyIndex, inclusionHashes): publicKeyIndex = the leaf's index in the sorted,
                deduplicated leaves; inclusionHashes = the sibling at each level, bottom-up (a self-paired last node's
                sibling is itself). Walk: current = leaf; per sibling: current = H(current || sibling) if index is
                even, else H(sibling || current); index //= 2. The result must be one of the collaboration's roots.
  Statement     b"parley-collab-proof-v1" 0 collaborationIdentifier 0 group 0 nonceHex 0 expires 0 verifier
                (UTF-8; nonceHex = lowercase hex of 32 bytes; expires = RFC 3339 UTC such as 2026-12-01T10:01:00Z;
                no trailing NUL).
  Update        a person adds a device, an old device signs:
                b"parley-identity-update-v1" 0 oldRootHex 0 newRootHex 0 nonceHex 0 expires 0 verifier;
                its proof is against the old root.
  Signature     ECDSA with SHA-256 over the statement bytes, DER encoded. The vectors' signatures are RFC 6979
                deterministic (not low-s normalised), so `generate` writes the same file every time.
  Verification  the first of these that applies, in this order:
                  malformed               non-hex input, or a hash (sibling, root, nonce) that is not 32 bytes
                  proofTooLong            more than 16 inclusion hashes
                  badPublicKey            not 65 bytes, first byte not 0x04, or not on the curve
                  badSignature            not valid DER, or does not verify over the statement
                  rootNotInCollaboration  the walked root is not among `roots`
                otherwise "valid".

Device keys are derived from labels: private scalar = int(SHA-256(label)) % (n - 1) + 1, n the P-256 order.

Usage
  Scripts/collab-vectors.py generate OUT.json
      writes the vectors: top-level "format", "parameters", "persons" (devices, root, a proof per device), "trees"
      (roots for 1..64 devices; tree N is the first N keys of "treePublicKeys") and "cases" (statements to verify,
      each with the reason it must give in "expect"). Checks its own output with this implementation and, when
      `openssl` is on PATH, every signature on a well-formed key with the OpenSSL CLI too.
  Scripts/collab-vectors.py check IN.json
      verifies each entry of IN.json's "cases" (the "statement" hex if present, else the statement built from the
      fields) and compares the result with its "expect"; rebuilds the roots and proofs of "persons" and "trees" if
      present. One line per mismatch, then a summary; exit status 0 if everything matches, 1 otherwise.
"""

import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
import tempfile

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

# The P-256 group order.
N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
# The P-256 field prime (only to make an off-curve point).
P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
MAX_INCLUSION_HASHES = 16
PROOF_TAG = b"parley-collab-proof-v1"
UPDATE_TAG = b"parley-identity-update-v1"
SPKI_P256_PREFIX = bytes.fromhex("3059301306072a8648ce3d020106082a8648ce3d030107034200")

COLLABORATION_IDENTIFIER = "c0ffee00-0000-4000-8000-000000000001"
GROUP = "group-7f3a"
NONCE = hashlib.sha256(b"nonce-1").digest()
EXPIRES = "2026-12-01T10:01:00Z"
VERIFIER = "sip:alice@127.0.0.1"
PERSON_DEVICE_COUNTS = [1, 2, 3, 5, 8]  # person1 .. person5
TREE_COUNTS = range(1, 65)

REASONS = ("valid", "malformed", "proofTooLong", "badPublicKey", "badSignature", "rootNotInCollaboration")


def sha256(data):
    return hashlib.sha256(data).digest()


# ---------------------------------------------------------------------------------------------------------------
# Keys and signatures


def scalar_for_label(label):
    return int.from_bytes(sha256(label.encode()), "big") % (N - 1) + 1


def private_key(scalar):
    return ec.derive_private_key(scalar, ec.SECP256R1())


def public_key_bytes(key):
    return key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


class Device:
    def __init__(self, label):
        self.label = label
        self.scalar = scalar_for_label(label)
        self.key = private_key(self.scalar)
        self.public_key = public_key_bytes(self.key)

    def sign(self, message):
        return sign_deterministic(self.scalar, message)


def rfc6979_nonce(scalar, digest):
    """RFC 6979 section 3.2 with HMAC-SHA-256, for a 256-bit order (qlen = hlen = 256)."""
    x = scalar.to_bytes(32, "big")
    h = (int.from_bytes(digest, "big") % N).to_bytes(32, "big")
    v, k = b"\x01" * 32, b"\x00" * 32
    k = hmac.new(k, v + b"\x00" + x + h, hashlib.sha256).digest()
    v = hmac.new(k, v, hashlib.sha256).digest()
    k = hmac.new(k, v + b"\x01" + x + h, hashlib.sha256).digest()
    v = hmac.new(k, v, hashlib.sha256).digest()
    while True:
        v = hmac.new(k, v, hashlib.sha256).digest()
        candidate = int.from_bytes(v, "big")
        if 1 <= candidate < N:
            return candidate
        k = hmac.new(k, v + b"\x00", hashlib.sha256).digest()
        v = hmac.new(k, v, hashlib.sha256).digest()


def sign_raw(scalar, message):
    """(r, s) of ECDSA-SHA-256 with the RFC 6979 nonce; k*G comes from `cryptography` (k as a private key)."""
    digest = sha256(message)
    z = int.from_bytes(digest, "big")
    k = rfc6979_nonce(scalar, digest)
    r = private_key(k).public_key().public_numbers().x % N
    s = pow(k, -1, N) * (z + r * scalar) % N
    if r == 0 or s == 0:  # probability ~2^-256; RFC 6979 would continue the HMAC loop
        raise RuntimeError("degenerate ECDSA signature")
    return r, s


def sign_deterministic(scalar, message):
    r, s = sign_raw(scalar, message)
    der = encode_dss_signature(r, s)
    # Belt and braces: `cryptography` must accept what we made.
    private_key(scalar).public_key().verify(der, message, ec.ECDSA(hashes.SHA256()))
    return der


def self_test_rfc6979():
    """RFC 6979 appendix A.2.5, P-256 with SHA-256, message "sample"."""
    x = 0xC9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721
    assert rfc6979_nonce(x, sha256(b"sample")) == 0xA6E3C57DD01ABE90086538398355DD4C3B17AA873382B0F24D6129493D8AAD60
    r, s = sign_raw(x, b"sample")
    assert r == 0xEFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716
    assert s == 0xF7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8
    r, s = sign_raw(x, b"test")
    assert r == 0xF1ABB023518351CD71D881567B1EA663ED3EFCF6C5132B354F28D3B0B7D38367
    assert s == 0x019F4113742A2B14BD25926B49C649155F267E60D3814B4C0CC84250E46F0083


# ---------------------------------------------------------------------------------------------------------------
# Merkle tree


def node(left, right):
    return sha256(left + right)


def sorted_leaves(public_keys):
    return sorted(set(sha256(pk) for pk in public_keys))


def tree_levels(leaves):
    if not leaves:
        raise ValueError("an identity has at least one device")
    levels = [list(leaves)]
    while len(levels[-1]) > 1:
        level = levels[-1]
        levels.append([node(level[i], level[i + 1] if i + 1 < len(level) else level[i])
                       for i in range(0, len(level), 2)])
    return levels


def merkle_root(public_keys):
    return tree_levels(sorted_leaves(public_keys))[-1][0]


def inclusion_proof(public_keys, public_key):
    """(publicKeyIndex, inclusionHashes) of public_key in the identity made of public_keys."""
    leaves = sorted_leaves(public_keys)
    index = leaves.index(sha256(public_key))
    siblings, i = [], index
    for level in tree_levels(leaves)[:-1]:
        j = i ^ 1
        siblings.append(level[j] if j < len(level) else level[i])
        i //= 2
    return index, siblings


def walk(leaf, index, siblings):
    current = leaf
    for sibling in siblings:
        current = node(current, sibling) if index % 2 == 0 else node(sibling, current)
        index //= 2
    return current


# ---------------------------------------------------------------------------------------------------------------
# Statements


class Malformed(Exception):
    pass


def unhex(value, length=None):
    if not isinstance(value, str):
        raise Malformed("not a hex string: %r" % (value,))
    try:
        data = bytes.fromhex(value)
    except ValueError:
        raise Malformed("not hex: %r" % (value,))
    if len(value) != 2 * len(data):  # bytes.fromhex skips whitespace
        raise Malformed("not plain hex: %r" % (value,))
    if length is not None and len(data) != length:
        raise Malformed("%d bytes, not %d" % (len(data), length))
    return data


def text(value):
    if not isinstance(value, str):
        raise Malformed("not a string: %r" % (value,))
    return value.encode("utf-8")


def proof_statement(collaboration_identifier, group, nonce, expires, verifier):
    return b"\x00".join([PROOF_TAG, collaboration_identifier.encode(), group.encode(), nonce.hex().encode(),
                         expires.encode(), verifier.encode()])


def update_statement(old_root, new_root, nonce, expires, verifier):
    return b"\x00".join([UPDATE_TAG, old_root.hex().encode(), new_root.hex().encode(), nonce.hex().encode(),
                         expires.encode(), verifier.encode()])


def case_kind(case):
    return case.get("kind") or ("identityUpdate" if "oldRoot" in case else "collabProof")


def statement_from_fields(case):
    """The statement the case's fields describe (raises Malformed, or KeyError if a field is missing)."""
    nonce = unhex(case["nonce"], 32)
    if case_kind(case) == "identityUpdate":
        return b"\x00".join([UPDATE_TAG, unhex(case["oldRoot"], 32).hex().encode(),
                             unhex(case["newRoot"], 32).hex().encode(), nonce.hex().encode(),
                             text(case["expires"]), text(case["verifier"])])
    return b"\x00".join([PROOF_TAG, text(case["collaborationIdentifier"]), text(case["group"]),
                         nonce.hex().encode(), text(case["expires"]), text(case["verifier"])])


# ---------------------------------------------------------------------------------------------------------------
# Verification


def signature_verifies(public_key, signature, statement):
    """None if public_key is no P-256 point, else whether signature (DER) verifies over statement."""
    if len(public_key) != 65 or public_key[0] != 0x04:
        return None
    try:
        key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), public_key)
    except ValueError:
        return None
    try:
        key.verify(signature, statement, ec.ECDSA(hashes.SHA256()))
        return True
    except (InvalidSignature, ValueError):
        return False


def verify(statement, public_key_hex, public_key_index, inclusion_hashes, signature_hex, roots):
    """One of REASONS. `statement` is bytes, or a callable returning them (which may raise Malformed)."""
    try:
        if callable(statement):
            statement = statement()
        public_key = unhex(public_key_hex)
        signature = unhex(signature_hex)
        if not isinstance(public_key_index, int) or isinstance(public_key_index, bool) or public_key_index < 0:
            raise Malformed("publicKeyIndex %r" % (public_key_index,))
        if not isinstance(inclusion_hashes, list) or not isinstance(roots, list):
            raise Malformed("inclusionHashes and roots are lists")
        siblings = [unhex(h, 32) for h in inclusion_hashes]
        root_set = set(unhex(r, 32) for r in roots)
    except Malformed:
        return "malformed"
    if len(siblings) > MAX_INCLUSION_HASHES:
        return "proofTooLong"
    verified = signature_verifies(public_key, signature, statement)
    if verified is None:
        return "badPublicKey"
    if not verified:
        return "badSignature"
    if walk(sha256(public_key), public_key_index, siblings) not in root_set:
        return "rootNotInCollaboration"
    return "valid"


def verify_case(case):
    if "statement" in case:
        statement = lambda: unhex(case["statement"])
    else:
        statement = lambda: statement_from_fields(case)
    roots = case.get("roots")
    if roots is None and case_kind(case) == "identityUpdate":
        roots = [case.get("oldRoot")]
    return verify(statement, case.get("publicKey"), case.get("publicKeyIndex"), case.get("inclusionHashes"),
                  case.get("signatureDER"), roots)


# ---------------------------------------------------------------------------------------------------------------
# check


def check_document(doc):
    """Mismatch lines and counts for a document of the generated shape."""
    problems = []
    cases = doc.get("cases", [])
    for position, case in enumerate(cases):
        name = case.get("name", "#%d" % position)
        expect = case.get("expect")
        if expect not in REASONS:
            problems.append("case %s: expect %r is not one of %s" % (name, expect, ", ".join(REASONS)))
        try:
            got = verify_case(case)
        except Exception as error:  # a broken case must not hide the others
            got = "error: %s" % error
        if got != expect:
            problems.append("case %s: expected %s, got %s" % (name, expect, got))
        if "statement" in case:
            try:
                built = statement_from_fields(case)
            except (KeyError, Malformed):
                built = None  # the statement hex is what counts; the fields are only a description
            if built is not None and case["statement"].lower() != built.hex():
                problems.append("case %s: statement hex differs from the statement its fields describe" % name)
        if case_kind(case) == "identityUpdate" and "newPublicKeys" in case:
            try:
                if merkle_root([unhex(k) for k in case["newPublicKeys"]]).hex() != case["newRoot"].lower():
                    problems.append("case %s: newRoot is not the root of newPublicKeys" % name)
            except (Malformed, ValueError) as error:
                problems.append("case %s: newPublicKeys: %s" % (name, error))

    persons = doc.get("persons", [])
    for person in persons:
        name = person.get("name", "?")
        try:
            keys = [unhex(d["publicKey"], 65) for d in person["devices"]]
            for device in person["devices"]:
                if "privateKey" in device:
                    derived = public_key_bytes(private_key(int.from_bytes(unhex(device["privateKey"], 32), "big")))
                    if derived.hex() != device["publicKey"].lower():
                        problems.append("person %s: %s's privateKey does not give its publicKey"
                                        % (name, device.get("label")))
                if "label" in device and "privateKey" in device and \
                        scalar_for_label(device["label"]) != int.from_bytes(unhex(device["privateKey"], 32), "big"):
                    problems.append("person %s: %s's privateKey is not the one its label gives"
                                    % (name, device["label"]))
            if merkle_root(keys).hex() != person["root"].lower():
                problems.append("person %s: root differs from the one rebuilt from its publicKeys" % name)
            for proof in person.get("proofs", []):
                index, siblings = inclusion_proof(keys, unhex(proof["publicKey"], 65))
                if index != proof["publicKeyIndex"] or [s.hex() for s in siblings] != \
                        [h.lower() for h in proof["inclusionHashes"]]:
                    problems.append("person %s: proof for %s differs from the rebuilt one"
                                    % (name, proof["publicKey"][:18]))
        except (KeyError, Malformed, ValueError) as error:
            problems.append("person %s: %s" % (name, error))

    trees = doc.get("trees", [])
    pool = doc.get("treePublicKeys", [])
    for tree in trees:
        try:
            keys = tree.get("publicKeys") or pool[:tree["count"]]
            if len(keys) != tree["count"]:
                problems.append("tree %s: %d public keys" % (tree["count"], len(keys)))
                continue
            if merkle_root([unhex(k, 65) for k in keys]).hex() != tree["root"].lower():
                problems.append("tree %s: root differs from the one rebuilt from its publicKeys" % tree["count"])
        except (KeyError, Malformed, ValueError) as error:
            problems.append("tree %s: %s" % (tree.get("count"), error))
    return problems, len(cases), len(persons), len(trees)


def command_check(path):
    with open(path) as f:
        doc = json.load(f)
    problems, cases, persons, trees = check_document(doc)
    for line in problems:
        print(line)
    summary = "%d cases, %d persons, %d trees" % (cases, persons, trees)
    if problems:
        print("check: %d mismatches in %s (%s)" % (len(problems), path, summary))
        return 1
    print("check: all match in %s (%s)" % (path, summary))
    return 0


# ---------------------------------------------------------------------------------------------------------------
# generate


def flip_byte(data, position):
    data = bytearray(data)
    data[position] ^= 0x01
    return bytes(data)


def off_curve_point(public_key):
    """0x04 || X || Y' with Y' != +-Y, so (X, Y') is not on the curve; checked by `cryptography`."""
    x = int.from_bytes(public_key[1:33], "big")
    y = int.from_bytes(public_key[33:], "big")
    for delta in range(1, 100):
        candidate = b"\x04" + x.to_bytes(32, "big") + ((y + delta) % P).to_bytes(32, "big")
        try:
            ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), candidate)
        except ValueError:
            return candidate
    raise RuntimeError("no off-curve point found")


def proof_entry(public_keys, public_key):
    index, siblings = inclusion_proof(public_keys, public_key)
    return {"publicKey": public_key.hex(), "publicKeyIndex": index, "inclusionHashes": [h.hex() for h in siblings]}


def generate_document():
    self_test_rfc6979()
    persons = []
    for number, count in enumerate(PERSON_DEVICE_COUNTS, 1):
        devices = [Device("person%d-device%d" % (number, k)) for k in range(count)]
        persons.append({"name": "person%d" % number, "devices": devices,
                        "root": merkle_root([d.public_key for d in devices])})
    all_roots = [p["root"].hex() for p in persons]
    statement = proof_statement(COLLABORATION_IDENTIFIER, GROUP, NONCE, EXPIRES, VERIFIER)
    fields = {"collaborationIdentifier": COLLABORATION_IDENTIFIER, "group": GROUP, "nonce": NONCE.hex(),
              "expires": EXPIRES, "verifier": VERIFIER, "statement": statement.hex()}

    def proof_case(name, person, device, expect, **changes):
        keys = [d.public_key for d in person["devices"]]
        index, siblings = inclusion_proof(keys, device.public_key)
        case = {"name": name, "kind": "collabProof"}
        case.update(fields)
        case.update({"publicKey": device.public_key.hex(), "publicKeyIndex": index,
                     "inclusionHashes": [s.hex() for s in siblings],
                     "signatureDER": device.sign(statement).hex(), "roots": list(all_roots), "expect": expect})
        case.update(changes)
        return case

    cases = []
    for person in persons:
        for device in person["devices"]:
            cases.append(proof_case("valid-%s" % device.label, person, device, "valid"))

    p1, p2, p3, p4, p5 = persons
    d = p4["devices"]
    # wrongIndex: a device whose leaf is not the self-paired last one (there the flip would change nothing).
    target = next(dev for dev in d if inclusion_proof([x.public_key for x in d], dev.public_key)[0] < 4)
    base = proof_case("wrongIndex", p4, target, "rootNotInCollaboration")
    base["publicKeyIndex"] ^= 1
    cases.append(base)

    case = proof_case("tamperedSibling", p4, d[1], "rootNotInCollaboration")
    case["inclusionHashes"][1] = flip_byte(bytes.fromhex(case["inclusionHashes"][1]), 7).hex()
    cases.append(case)

    other = proof_statement(COLLABORATION_IDENTIFIER, "group-other", NONCE, EXPIRES, VERIFIER)
    cases.append(proof_case("otherStatement", p3, p3["devices"][0], "badSignature",
                            signatureDER=p3["devices"][0].sign(other).hex()))

    cases.append(proof_case("otherDeviceSigned", p3, p3["devices"][0], "badSignature",
                            signatureDER=p3["devices"][1].sign(statement).hex()))

    key = p2["devices"][0].public_key
    cases.append(proof_case("truncatedKey64", p2, p2["devices"][0], "badPublicKey", publicKey=key[1:].hex()))
    cases.append(proof_case("compressedKey33", p2, p2["devices"][0], "badPublicKey",
                            publicKey=(bytes([2 + key[64] % 2]) + key[1:33]).hex()))
    cases.append(proof_case("wrongPrefix", p2, p2["devices"][0], "badPublicKey",
                            publicKey=(b"\x05" + key[1:]).hex()))
    cases.append(proof_case("offCurve", p2, p2["devices"][0], "badPublicKey",
                            publicKey=off_curve_point(key).hex()))

    cases.append(proof_case("badDER", p5, p5["devices"][2], "badSignature",
                            signatureDER=sha256(b"garbage").hex()))
    good = p5["devices"][2].sign(statement)
    cases.append(proof_case("derTrailingByte", p5, p5["devices"][2], "badSignature",
                            signatureDER=(good + b"\x00").hex()))

    case = proof_case("tooLong", p5, p5["devices"][3], "proofTooLong")
    case["inclusionHashes"] += [sha256(b"padding-%d" % i).hex() for i in range(17 - len(case["inclusionHashes"]))]
    cases.append(case)

    # 16 hashes is the most there may be: a synthetic path whose walked root is put in `roots`.
    device = p1["devices"][0]
    siblings = [sha256(b"sibling-%d" % i) for i in range(16)]
    index = 0xA5C3
    cases.append(proof_case("maxLength16", p1, device, "valid", publicKeyIndex=index,
                            inclusionHashes=[s.hex() for s in siblings],
                            roots=[walk(sha256(device.public_key), index, siblings).hex()]))

    cases.append(proof_case("rootRemoved", p4, d[2], "rootNotInCollaboration",
                            roots=[r for r in all_roots if r != p4["root"].hex()]))
    cases.append(proof_case("noRoots", p1, p1["devices"][0], "rootNotInCollaboration", roots=[]))

    case = proof_case("nonHexSibling", p3, p3["devices"][1], "malformed")
    case["inclusionHashes"][0] = "zz" + case["inclusionHashes"][0][2:]
    cases.append(case)
    case = proof_case("shortSibling", p3, p3["devices"][1], "malformed")
    case["inclusionHashes"][0] = case["inclusionHashes"][0][:62]
    cases.append(case)
    cases.append(proof_case("shortRoot", p3, p3["devices"][1], "malformed",
                            roots=all_roots[:-1] + [all_roots[-1][:62]]))
    cases.append(proof_case("nonHexSignature", p3, p3["devices"][1], "malformed", signatureDER="30zz"))

    # Order of the checks.
    case = proof_case("orderMalformedBeforeTooLong", p5, p5["devices"][0], "malformed")
    case["inclusionHashes"] += [sha256(b"padding-%d" % i).hex() for i in range(14)]
    case["inclusionHashes"][16] = case["inclusionHashes"][16][:62]
    cases.append(case)
    case = proof_case("orderTooLongBeforeBadKey", p5, p5["devices"][0], "proofTooLong", publicKey=key[1:].hex())
    case["inclusionHashes"] += [sha256(b"padding-%d" % i).hex() for i in range(14)]
    cases.append(case)
    cases.append(proof_case("orderBadKeyBeforeBadSignature", p2, p2["devices"][1], "badPublicKey",
                            publicKey=off_curve_point(p2["devices"][1].public_key).hex(), signatureDER="3000"))
    cases.append(proof_case("orderBadSignatureBeforeRoot", p2, p2["devices"][1], "badSignature",
                            signatureDER=p2["devices"][1].sign(other).hex(), roots=[p1["root"].hex()]))

    # Identity update: person2 adds a third device; device0 (in the old identity) signs.
    old_keys = [dev.public_key for dev in p2["devices"]]
    added = Device("person2-device2")
    new_keys = old_keys + [added.public_key]
    old_root, new_root = p2["root"], merkle_root(new_keys)
    update = update_statement(old_root, new_root, NONCE, EXPIRES, VERIFIER)

    def update_case(name, signer, keys, expect, message=update, **changes):
        index, siblings = inclusion_proof(keys, signer.public_key)
        case = {"name": name, "kind": "identityUpdate", "oldRoot": old_root.hex(), "newRoot": new_root.hex(),
                "nonce": NONCE.hex(), "expires": EXPIRES, "verifier": VERIFIER, "statement": update.hex(),
                "newPublicKeys": [k.hex() for k in new_keys],
                "publicKey": signer.public_key.hex(), "publicKeyIndex": index,
                "inclusionHashes": [s.hex() for s in siblings], "signatureDER": signer.sign(message).hex(),
                "roots": [old_root.hex()], "expect": expect}
        case.update(changes)
        return case

    cases.append(update_case("identityUpdate", p2["devices"][0], old_keys, "valid"))
    cases.append(update_case("identityUpdateSwappedRoots", p2["devices"][0], old_keys, "badSignature",
                             message=update_statement(new_root, old_root, NONCE, EXPIRES, VERIFIER)))
    cases.append(update_case("identityUpdateByNewDevice", added, new_keys, "rootNotInCollaboration"))
    cases.append(update_case("identityUpdateProofStatement", p2["devices"][0], old_keys, "badSignature",
                             message=statement))

    tree_pool = [Device("tree-device-%d" % k).public_key for k in range(max(TREE_COUNTS))]
    trees = [{"count": n, "root": merkle_root(tree_pool[:n]).hex()} for n in TREE_COUNTS]

    return {
        "format": "parley-collab-proof-v1",
        "description": "Generated by Scripts/collab-vectors.py (see its docstring); byte strings are lowercase "
                       "hex. Device keys: private scalar = int(SHA-256(label)) % (n-1) + 1. Tree N is made of "
                       "the first N of treePublicKeys (labels tree-device-0 ...). Signatures are RFC 6979.",
        "maxInclusionHashes": MAX_INCLUSION_HASHES,
        "parameters": {"collaborationIdentifier": COLLABORATION_IDENTIFIER, "group": GROUP, "nonce": NONCE.hex(),
                       "expires": EXPIRES, "verifier": VERIFIER, "statement": statement.hex()},
        "persons": [{
            "name": p["name"],
            "devices": [{"label": dev.label, "privateKey": dev.scalar.to_bytes(32, "big").hex(),
                         "publicKey": dev.public_key.hex()} for dev in p["devices"]],
            "root": p["root"].hex(),
            "proofs": [proof_entry([x.public_key for x in p["devices"]], dev.public_key) for dev in p["devices"]],
        } for p in persons],
        "treePublicKeys": [k.hex() for k in tree_pool],
        "trees": trees,
        "cases": cases,
    }


def openssl_cross_check(cases):
    """Problems found by checking each signature on a well-formed P-256 key with the OpenSSL CLI; [] without it."""
    openssl = shutil.which("openssl")
    if openssl is None:
        print("generate: openssl is not on PATH; no OpenSSL cross-check")
        return [], 0
    problems, checked = [], 0
    with tempfile.TemporaryDirectory(prefix="collab-vectors-") as tmp:
        spki, pem = os.path.join(tmp, "pub.der"), os.path.join(tmp, "pub.pem")
        sig, stmt = os.path.join(tmp, "sig.der"), os.path.join(tmp, "stmt.bin")
        for case in cases:
            try:
                public_key = unhex(case["publicKey"])
                signature = unhex(case["signatureDER"])
                statement = unhex(case["statement"])
            except Malformed:
                continue
            expected = signature_verifies(public_key, signature, statement)
            if expected is None:
                continue
            with open(spki, "wb") as f:
                f.write(SPKI_P256_PREFIX + public_key)
            with open(sig, "wb") as f:
                f.write(signature)
            with open(stmt, "wb") as f:
                f.write(statement)
            subprocess.run([openssl, "pkey", "-pubin", "-inform", "DER", "-in", spki, "-out", pem], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            run = subprocess.run([openssl, "dgst", "-sha256", "-verify", pem, "-signature", sig, stmt],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
            said = run.stdout.strip()
            if expected and (run.returncode != 0 or said != "Verified OK"):
                problems.append("openssl: case %s: expected Verified OK, got %r (exit %d)"
                                % (case["name"], said, run.returncode))
            # A signature OpenSSL cannot parse as DER gives "Error verifying data" on stderr instead.
            refused = said == "Verification failure" or (said == "" and "Error verifying data" in run.stderr)
            if not expected and (run.returncode == 0 or not refused):
                problems.append("openssl: case %s: expected Verification failure, got %r / %r (exit %d)"
                                % (case["name"], said, run.stderr.strip(), run.returncode))
            checked += 1
    return problems, checked


def command_generate(path):
    doc = generate_document()
    problems, cases, persons, trees = check_document(doc)
    ossl_problems, ossl_checked = openssl_cross_check(doc["cases"])
    problems += ossl_problems
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    with open(path) as f:  # and what was written reads back the same
        if json.load(f) != doc:
            problems.append("the file written does not read back as the document")
    for line in problems:
        print(line)
    print("generate: wrote %s (%d bytes): %d cases, %d persons, %d trees; self-check %s; openssl checked %d "
          "signatures" % (path, os.path.getsize(path), cases, persons, trees,
                          "FAILED" if problems else "ok", ossl_checked))
    return 1 if problems else 0


def main(argv):
    if len(argv) != 3 or argv[1] not in ("generate", "check"):
        sys.stderr.write("usage: %s generate OUT.json | check IN.json\n" % os.path.basename(argv[0]))
        return 2
    return command_generate(argv[2]) if argv[1] == "generate" else command_check(argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
