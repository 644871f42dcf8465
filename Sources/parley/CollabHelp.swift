/// The help texts of `parley collab` and its subcommands.
enum CollabHelp {
    /// What COLLAB is, and the exit codes.
    static let footer = """
        COLLAB is a collaboration's identifier or a unique prefix of it ('parley collab list'). The model and the
        proofs: docs/collaboration.md. Exit codes: 0 done, 1 refused or failed (or no parleyd running), 64 usage error.
        """

    static let overview = """
        usage: parley collab <subcommand> [--data-dir DIR] [--json] …

        Collaborations (Apple's Messages collaboration) in a running parleyd's calls: the parleyd that starts one
        on a call is its server; members prove with a signed proof that their device belongs to an invited person.

        subcommands:
          list                               the collaborations: owned ones with their people, shared ones with access
          start CONV TITLE [--url URL] [--confirm]
                                             share a collaboration in a joined call (and its merged group)
          open COLLAB                        ask the owner for access with this device's proof
          challenge COLLAB                   (owner) a fresh challenge, as JSON, for 'prove'
          prove CHALLENGE.json               sign a challenge with this device's key; prints the proof as JSON
          verify COLLAB NONCE PROOF.json     (owner) check a proof for one of its challenges
          confirm ACTION [--refuse]          accept (or refuse) a participants update that waits for confirmation
          notice COLLAB edit|comment|created|deleted|renamed|moved|addedCollaborator|removedCollaborator
          notice COLLAB mention ROOT         post a notice (a mention reaches the mentioned person alone)
          end COLLAB                         (owner) end it
          watch                              print every change as it happens

        Run 'parley collab SUBCOMMAND --help' for a subcommand's options and examples.

        options:
        \(ControlHelp.options)

        examples:
          parley collab start 1 "Trip plan" --data-dir /tmp/parley-a
          parley collab open 3be943a0 --data-dir /tmp/parley-b

        \(footer)
        """

    static let list = """
        usage: parley collab list [--data-dir DIR] [--json]

        Lists the collaborations of the running parleyd's calls, one a line: identifier, title, state, link, and
        for one this parleyd owns, who is invited, granted or revoked; for one shared with it, its access.

        options:
        \(ControlHelp.options)

        example:
          parley collab list --data-dir /tmp/parley-a

        \(footer)
        """

    static let start = """
        usage: parley collab start CONV TITLE [--url URL] [--confirm] [--data-dir DIR] [--json]

        Shares a collaboration in a joined call and in every call merged with it: this parleyd becomes its server,
        and every member whose person identity it knows is invited.

        options:
          --url URL        the document's link (default parley://collaboration/ID)
          --confirm        participants updates wait for 'parley collab confirm' (additions only; removals apply at once)
        \(ControlHelp.options)

        example:
          parley collab start 1 "Trip plan" --data-dir /tmp/parley-a

        CONV is a conversation: its uuid, a unique prefix of it, or its # in 'parley list'.
        \(footer)
        """

    static let open = """
        usage: parley collab open COLLAB [--data-dir DIR] [--json]

        Asks the collaboration's owner for access: the owner sends a challenge, this device signs it with its key
        and a proof that the key belongs to its person, and the owner grants access or says why not.

        options:
        \(ControlHelp.options)

        example:
          parley collab open 3be943a0 --data-dir /tmp/parley-b

        \(footer)
        """

    static let challenge = """
        usage: parley collab challenge COLLAB [--data-dir DIR]

        (The owner.) Makes a fresh single-use challenge for a collaboration this parleyd owns and prints it as JSON:
        collaboration, group, nonce, expires and verifier — what 'parley collab prove' signs on another device.

        options:
        \(ControlHelp.options)

        example:
          parley collab challenge 3be943a0 --data-dir /tmp/parley-a > challenge.json

        \(footer)
        """

    static let prove = """
        usage: parley collab prove CHALLENGE.json [--data-dir DIR]

        Signs a challenge (the JSON 'parley collab challenge' printed) with this device's key and prints the signed
        proof as JSON: the public key, its index in the person's tree, the inclusion hashes and the signature.

        options:
        \(ControlHelp.options)

        example:
          parley collab prove challenge.json --data-dir /tmp/parley-b > proof.json

        \(footer)
        """

    static let verify = """
        usage: parley collab verify COLLAB NONCE PROOF.json [--data-dir DIR] [--json]

        (The owner.) Checks a signed proof against one of this parleyd's challenges (NONCE is the challenge's
        nonce): prints "granted: ROOT", or why the proof is refused (badSignature, rootNotInCollaboration,
        revoked, nonceUnknown, nonceExpired, nonceReused…).

        options:
        \(ControlHelp.options)

        example:
          parley collab verify 3be943a0 9f1c…e2 proof.json --data-dir /tmp/parley-a

        \(footer)
        """

    static let confirm = """
        usage: parley collab confirm ACTION [--refuse] [--data-dir DIR] [--json]

        Accepts a participants update that waits for confirmation (a collaboration started with --confirm; ACTION is
        the update's action id, shown by 'parley collab watch'): the people it adds are invited.

        options:
          --refuse         refuse it instead: nobody is added
        \(ControlHelp.options)

        example:
          parley collab confirm 6d0f8a5e-… --data-dir /tmp/parley-a

        \(footer)
        """

    static let notice = """
        usage: parley collab notice COLLAB edit|comment|created|deleted|renamed|moved|addedCollaborator|removedCollaborator
               parley collab notice COLLAB mention ROOT            [--data-dir DIR] [--json]

        Posts a notice into the collaboration's calls, shown on the members' call cards: a change (edit, comment),
        what happened to the document (created, deleted, renamed, moved), membership, or a mention that reaches
        only the person whose root is ROOT.

        options:
        \(ControlHelp.options)

        examples:
          parley collab notice 3be943a0 edit --data-dir /tmp/parley-a
          parley collab notice 3be943a0 mention 5d2a…c1 --data-dir /tmp/parley-a

        \(footer)
        """

    static let end = """
        usage: parley collab end COLLAB [--data-dir DIR] [--json]

        (The owner.) Ends a collaboration this parleyd owns, for every member.

        options:
        \(ControlHelp.options)

        example:
          parley collab end 3be943a0 --data-dir /tmp/parley-a

        \(footer)
        """

    static let watch = """
        usage: parley collab watch [--data-dir DIR] [--json]

        Prints every change as it happens, until Ctrl-C — collaborations started, shared and ended, participants
        updates, proofs checked, notices, identities announced — together with the calls' own changes.

        options:
        \(ControlHelp.options)

        example:
          parley collab watch --data-dir /tmp/parley-b

        \(footer)
        """
}
