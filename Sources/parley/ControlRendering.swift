import CommandLineSupport
import ControlChannel
import ControlProtocol
import Foundation

/// How the terminal softphone shows what parleyd says.
enum ControlRendering {
    /// The `parley list` table.
    static func list(_ result: ListResult, now: Date = Date()) -> String {
        guard !result.conversations.isEmpty else { return "no live conversations" }
        // The # column is as wide as the largest number, right-aligned, so the columns after it stay in line.
        let width = String(result.conversations.count).count
        func number(_ text: String) -> String { String(repeating: " ", count: width - text.count) + text }
        var lines = ["  \(number("#"))  conversation  state     direction  duration  flags         group     who"]
        for (index, conversation) in result.conversations.enumerated() {
            lines.append("  \(number(String(index + 1)))  " + line(conversation, now: now))
        }
        return lines.joined(separator: "\n")
    }

    /// `1b4e28ba      joined    incoming   00:42     muted         -         Alice Liddell <sip:alice@127.0.0.1:5062>`.
    static func line(_ conversation: ConversationInfo, now: Date = Date()) -> String {
        let uuid = conversation.uuid.prefix(8).lowercased()
        let state = pad(conversation.state, 9)
        let direction = pad(conversation.direction, 10)
        let duration = pad(conversation.connectedAt.flatMap(ControlTime.date).map { since in
            let end = conversation.endedAt.flatMap(ControlTime.date) ?? now
            let seconds = max(0, Int(end.timeIntervalSince(since)))
            return String(format: "%02d:%02d", seconds / 60, seconds % 60)
        } ?? "-", 9)
        var flags: [String] = []
        if conversation.state == "paused" { flags.append("held") }
        if conversation.isRemotelyHeld { flags.append("held-by-peer") }
        if conversation.isMuted { flags.append("muted") }
        if conversation.isVideo { flags.append("video") }
        if conversation.encryption != nil { flags.append("encrypted") }
        let flagText = pad(flags.isEmpty ? "-" : flags.joined(separator: ","), 13)
        let group = pad(conversation.group.map { String($0.prefix(8)).lowercased() } ?? "-", 9)
        let who = conversation.members.map { member in
            member.shownName == member.value ? member.value : "\(member.shownName) <\(member.value)>"
        }
        let reason = conversation.endedReason.map { " (\($0)\(conversation.sipStatus.map { ", SIP \($0)" } ?? ""))" } ?? ""
        return "\(uuid)      \(state) \(direction) \(duration) \(flagText) \(group) \(who.joined(separator: ", "))\(reason)"
    }

    /// `parley status`: blocks, each under its heading — parleyd, each account's registration (one "registration"
    /// block without accounts), conversations, counters, limits — with the values of all blocks in one column.
    static func status(_ status: StatusResult) -> String {
        let daemon = status.daemon
        var parleyd: [(String, String)] = [
            ("version", daemon.version), ("control protocol", String(status.protocol)), ("user", daemon.user ?? "-"),
        ]
        parleyd += daemon.listening.isEmpty ? [("listening on", "-")] : daemon.listening.map { ("listening on", $0) }
        parleyd += [("web page", daemon.webPage ?? "-"), ("push token", daemon.pushToken ?? "-")]
        let registrations = status.accounts.isEmpty ? [status.registration] : status.accounts
        let accountBlocks = registrations.map { registration in
            var registered = [("state", registration.state)]
            if let account = registration.account { registered.insert(("address of record", account), at: 0) }
            if let until = registration.expiresAt { registered.append(("until", until)) }
            if let reason = registration.reason { registered.append(("reason", reason)) }
            if let mapped = registration.mappedAddress { registered.append(("behind a NAT, seen as", mapped)) }
            let heading = registration.name.map { "account \($0)" } ?? "registration"
            return (heading: heading, rows: registered)
        }
        let blocks: [(heading: String, rows: [(String, String)])] = [("parleyd", parleyd)] + accountBlocks + [
            ("conversations", [("live", String(status.conversations))]),
            ("counters (since parleyd started)", status.counters.entries.map { ($0.name, String($0.value)) }),
            ("limits", status.limits.entries.map { ($0.name, String($0.value)) }),
        ]
        let width = blocks.flatMap(\.rows).map(\.0.count).max() ?? 0
        return blocks.map { block in
            let rows = block.rows.isEmpty ? ["  (none)"] : block.rows.map { "  " + pad($0.0, width) + "  " + $0.1 }
            return ([block.heading] + rows).joined(separator: "\n")
        }.joined(separator: "\n\n")
    }

    /// A failed request for people: the sentence, then the code and the SIP status.
    static func describe(_ error: ControlError) -> String {
        var facts = [error.code.rawValue]
        if let status = error.details?.sipStatus {
            facts.append("SIP \(status)\(error.details?.sipReason.map { " \($0)" } ?? "")")
        }
        if let field = error.details?.field { facts.append("field \(field)") }
        return "\(error.message) (\(facts.joined(separator: ", ")))"
    }

    /// `parley watch`: every event, one line each (state changes with →, other changes with ~).
    static func watch(_ session: ControlSession, json: Bool, levels: Bool = false) throws -> ExitCode {
        let subscribed = try session.request(.subscribe(SubscribeParams(audioLevels: levels ? true : nil)), as: SubscribeResult.self)
        print(json ? String(decoding: subscribed.line, as: UTF8.self) : "watching parleyd (Ctrl-C to stop)")
        flushOutput()
        while true {
            let received: Data
            do {
                received = try session.nextEvent(timeout: 3600)
            } catch let error as ControlClientError {
                if case .timedOut = error { continue }
                throw error
            }
            guard let event = ControlEventMessage.decode(received) else { continue }
            if json {
                print(String(decoding: received, as: UTF8.self))
            } else if let text = describe(event) {
                print(text)
            }
            flushOutput()
        }
    }

    /// A call's audio and its figures, two lines.
    /// How a call's audio is protected, in words: `, encrypted (DTLS-SRTP, …)`, `, encrypted (SDES, suite)` or
    /// `, not encrypted`.
    static func protection(_ media: MediaInfo) -> String {
        switch media.encryption {
        case "dtls": ", encrypted (SRTP keyed by DTLS, the peer's certificate checked)"
        case "sdes": ", encrypted (SRTP keyed by SDES\(media.encryptionSuite.map { ", \($0)" } ?? ""))"
        default: ", not encrypted"
        }
    }

    /// `parley video-source`: one line per camera.
    static func cameras(_ result: VideoDevicesResult) -> String {
        guard !result.devices.isEmpty else { return "no camera" }
        return result.devices.map { "\($0.id)  \($0.name)" }.joined(separator: "\n")
    }

    static func audio(_ result: MediaStatsResult) -> String {
        guard let media = result.media else { return "audio  none (the call carries no audio now)" }
        var lines = [
            "audio  \(media.codec) \(media.localAddress):\(media.localPort) ⇄ \(media.remoteAddress):\(media.remotePort) "
                + "\(media.direction), ptime \(media.ptime.map(String.init) ?? "-")"
                + (media.telephoneEvent.map { ", telephone-event \($0)" } ?? "")
                + Self.protection(media),
        ]
        if let stats = result.stats {
            let peer = stats.peerPacketsLost.map { lost in
                "; the peer: lost \(lost), jitter \(stats.peerJitterMs ?? 0) ms"
                    + (stats.roundTripMs.map { ", round trip \($0) ms" } ?? "")
            } ?? "; no report from the peer yet"
            lines.append(
                "stats  sent \(stats.packetsSent) received \(stats.packetsReceived) lost \(stats.packetsLost) "
                    + "(\(stats.lossPercent) %) jitter \(stats.jitterMs) ms"
                    + (stats.packetsDropped > 0 ? " dropped \(stats.packetsDropped) (a stranger's, or failing SRTP)" : "") + peer)
        } else {
            lines.append("stats  none yet (read every two seconds while parleyd carries the audio)")
        }
        if let video = result.video {
            lines.append(
                "video  \(video.codec) port \(video.localPort) ⇄ \(video.remoteAddress):\(video.remotePort) \(video.direction)"
                    + (video.encryption.map { ", encrypted (\($0))" } ?? ", not encrypted"))
        }
        if let figures = result.stats?.video {
            lines.append(Self.videoFigures(figures))
        }
        return lines.joined(separator: "\n")
    }

    /// A call's video figures on one line.
    static func videoFigures(_ figures: VideoStatsInfo) -> String {
        "frames sent \(figures.framesSent) (\(figures.frameRateSent) fps, \(figures.kilobitsSent) kbit/s) received "
            + "\(figures.framesReceived) (\(figures.frameRateReceived) fps, \(figures.width)x\(figures.height), \(figures.kilobitsReceived) kbit/s); "
            + "keyframes asked of us \(figures.keyframeRequestsReceived), by us \(figures.keyframeRequestsSent); "
            + "NACKs received \(figures.nacksReceived), sent \(figures.nacksSent)"
    }

    /// A level (-dBov) as a bar of up to ten marks (one per 6 dB above -60 dBov) and its figure.
    static func meter(_ level: Int?) -> String {
        guard let level else { return "--------------- " }
        let marks = max(0, min(10, (60 - level + 5) / 6))
        return String(repeating: "#", count: marks) + String(repeating: ".", count: 10 - marks) + " -\(level) dBov".padding(toLength: 11, withPad: " ", startingAt: 0)
    }

    /// One event in words (nil: nothing worth a line).
    static func describe(_ event: ControlEventMessage) -> String? {
        switch event {
        case .conversationChanged(let change):
            if change.changes.contains("state") || change.changes == ["new"] {
                return "\(pad(change.from ?? "new", 8)) → \(line(change.conversation))"
            }
            return "         ~ \(change.conversation.uuid.prefix(8).lowercased()) \(change.changes.joined(separator: ", ")): "
                + line(change.conversation)
        case .tonesReceived(let tones): return "tones    ← \(tones.conversation.prefix(8).lowercased()) \(tones.digits)"
        case .transferProgress(let progress):
            return "transfer \(progress.conversation.prefix(8).lowercased()) \(progress.role): \(progress.status) \(progress.reason)"
                + (progress.final ? " (final)" : "")
        case .audioRouteChanged(let route):
            return "audio    " + (route.conversation.map { "\($0.prefix(8).lowercased()) " } ?? "") + "\(route.reason): "
                + "\(route.source ?? "no source") and \(route.sink ?? "no sink")"
        case .doNotDisturbChanged(let state):
            return "dnd      " + (state.enabled ? "on: calls are refused without ringing" : "off")
        case .browserAudioChanged(let change):
            return "browser  \(change.conversation.prefix(8).lowercased()) audio \(change.state)" + (change.reason.map { ": \($0)" } ?? "")
        case .mediaStats(let figures):
            let stats = figures.stats
            return "stats    \(figures.conversation.prefix(8).lowercased()) \(stats.codec) sent \(stats.packetsSent) "
                + "received \(stats.packetsReceived) lost \(stats.packetsLost) (\(stats.lossPercent) %) jitter \(stats.jitterMs) ms"
                + (stats.roundTripMs.map { " round trip \($0) ms" } ?? "")
                + (stats.video.map { "; video " + ControlRendering.videoFigures($0) } ?? "")
        case .audioLevels(let levels):
            return "level    \(levels.conversation.prefix(8).lowercased()) heard \(meter(levels.heard)) said \(meter(levels.said))"
        case .mediaChanged(let change):
            let call = change.conversation.prefix(8).lowercased()
            guard let media = change.media else { return "media    \(call) none" }
            return "media    \(call) \(media.codec) \(media.localAddress):\(media.localPort) ⇄ "
                + "\(media.remoteAddress):\(media.remotePort) \(media.direction)"
                + (change.video.map { "; video \($0.codec) port \($0.localPort) ⇄ \($0.remoteAddress):\($0.remotePort) \($0.direction)" } ?? "")
        case .historyChanged(let change):
            return "history  \(change.change) \(change.records.map(String.init).joined(separator: ", "))"
        case .registrationChanged(let registration):
            let account = registration.name.map { " of \($0)" } ?? ""
            return "registration\(account) \(registration.state)\(registration.reason.map { ": \($0)" } ?? "")"
        case .pushReceived(let push): return "push     \(push.handling) \(push.callID)"
        case .actionSettled(let settled):
            guard let error = settled.error else { return nil }
            return "failed   \(settled.action) on \(settled.conversation.prefix(8).lowercased()): \(describe(error))"
        case .groupSessionChanged(let change):
            let session = change.session
            return "group    \(change.change) \(session.session.prefix(8)) \"\(session.activity.title)\" on \(session.conversation.prefix(8).lowercased())"
                + " (\(session.activeParticipants.map(\.name).joined(separator: ", ")))" + (session.reason.map { " — \($0)" } ?? "")
        case .groupParticipantsChanged(let change):
            let added = change.added.map { "+\($0.name)" }, removed = change.removed.map { "−\($0.name)" }
            return "group    \(change.session.prefix(8)) \((added + removed).joined(separator: " ")): \(change.active.map(\.name).joined(separator: ", "))"
        case .groupMessage(let message):
            let text = message.type == "text"
                ? (message.data.stringValue ?? message.data["text"]?.stringValue ?? "")
                : String(decoding: message.data.encoded, as: UTF8.self)
            return "message  \(message.session.prefix(8)) #\(message.seq) [\(message.source.name)] \(message.type == "text" ? "" : message.type + " ")\(text)"
        case .groupSendResult(let result):
            if let error = result.error { return "sent     \(result.session.prefix(8)) id \(result.id): \(describe(error))" }
            return "sent     \(result.session.prefix(8)) #\(result.seq.map(String.init) ?? "-") to \(result.deliveredTo.count)"
                + (result.failed.isEmpty ? "" : ", failed \(result.failed.count)")
                + (result.unsupported.isEmpty ? "" : ", unsupported \(result.unsupported.count)")
        case .textMessage(let message):
            let claim = message.verified ? "" : " (unverified: claims to be \(message.from ?? "?"))"
            return "text     ← \(message.conversation.prefix(8).lowercased())\(claim) \(message.text)"
        case .collaborationChanged(let change):
            return "collab   " + collaborationLine(change.collaboration)
        case .collaborationParticipantsUpdate(let update):
            return "collab   \(update.collaboration.prefix(8)) update \(update.action)"
                + update.added.map { " +\($0.prefix(12))" }.joined() + update.removed.map { " −\($0.prefix(12))" }.joined()
                + (update.requiresConfirmation ? " (confirm with `parley collab confirm \(update.action)`)" : "")
        case .collaborationActionCompleted(let completed):
            return completed.outcome == "fulfilled" ? nil : "collab   \(completed.kind) \(completed.action) \(completed.outcome)"
        case .collaborationVerified(let verified):
            return "collab   \(verified.collaboration.prefix(8)) proof from \(verified.participant ?? "a frontend"): "
                + (verified.granted ? "granted \(verified.root?.prefix(12) ?? "")" : "rejected (\(verified.reason ?? "?"))")
        case .collaborationNotice(let notice):
            return "notice   \"\(notice.title ?? notice.url)\" [\(notice.fromName)] \(noticeWords(notice))"
        case .identityAnnounced(let announced):
            return "identity \(announced.name) is \(announced.root.prefix(16))… in \(announced.session.prefix(8))"
        }
    }

    /// A collaboration in one line.
    static func collaborationLine(_ data: CollaborationData) -> String {
        let role = data.isOwner
            ? "owner, " + (data.participants.isEmpty ? "nobody invited yet" : "") + data.participants.map { "\($0.name ?? String($0.root.prefix(8))) \($0.access)" }.joined(separator: ", ")
            : "access \(data.access)" + (data.rejection.map { " (\($0))" } ?? "")
        return "\(data.collaboration) \"\(data.title ?? "")\" \(data.state) \(data.url) — \(role)"
    }

    /// What a notice says.
    static func noticeWords(_ notice: CollaborationNoticeEvent) -> String {
        switch notice.kind {
        case "change": notice.trigger == "edit" ? "edited it" : "commented"
        case "mention": "mentioned you"
        case "persistence": notice.trigger
        case "membership": notice.trigger == "addedCollaborator" ? "a collaborator was added" : "a collaborator was removed"
        default: notice.kind
        }
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text.padding(toLength: width, withPad: " ", startingAt: 0)
    }
}
