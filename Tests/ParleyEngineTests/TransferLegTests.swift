import ConversationKit
import Foundation
import SIPMessages
import Testing

@testable import ParleyEngine

/// A blind transfer in the call leg (RFC 3515): the REFER we send, and the NOTIFYs that settle it, on the table's
/// representative confirmed leg.
@Suite("Call leg: blind transfer (REFER, NOTIFY sipfrag)")
struct TransferLegTests {
    static let sipfrag = SIPContentType(type: "message", subtype: "sipfrag")

    /// A confirmed leg whose transfer to carol is out (and answered `answer` when given).
    static func transferring(answer: Int? = nil) -> (CallLeg, CallLegTable.TableContext, ConversationAction) {
        let context = CallLegTable.TableContext()
        var leg = CallLegTable.representative(.confirmed, in: context)
        let action = ConversationAction.transfer(conversationUUID: leg.uuid, to: CallLegTable.transferTarget)
        _ = leg.transfer(action, to: SIPURI("sip:carol@192.0.2.3")!, in: context)
        if let answer {
            let refer = CallLegTable.ourRequest(.refer, of: leg, cseq: leg.dialog?.localSequence ?? 1)
            _ = leg.receive(CallLegTable.response(answer, to: refer), to: .refer, in: context)
        }
        return (leg, context, action)
    }

    static func notify(_ body: String, event: String? = "refer", to leg: CallLeg, cseq: UInt32 = 20) -> SIPRequest {
        var request = CallLegTable.peerRequest(.notify, to: leg, cseq: cseq, contentType: sipfrag, body: Data(body.utf8))
        if let event { request.headers.append("Event", event) }
        return request
    }

    static func statuses(_ effects: [CallLegEffect]) -> [Int] {
        effects.compactMap { if case .respond(let response, _) = $0 { response.statusCode } else { nil } }
    }

    @Test("the REFER names the target in Refer-To and us in Referred-By, in the dialog, with a Contact")
    func referRequest() throws {
        let context = CallLegTable.TableContext()
        var leg = CallLegTable.representative(.confirmed, in: context)
        let action = ConversationAction.transfer(conversationUUID: leg.uuid, to: CallLegTable.transferTarget)
        let effects = leg.transfer(action, to: SIPURI("sip:carol@192.0.2.3")!, in: context)
        let refer = try #require(effects.compactMap { if case .send(let request, .refer, _) = $0 { request } else { nil } }.first)
        #expect(refer.method == .refer)
        #expect(refer.headers["Refer-To"] == "<sip:carol@192.0.2.3>")
        #expect(refer.headers["Referred-By"]?.contains("sip:parley@192.0.2.1") == true, "\(refer.headers)")
        #expect(refer.headers["Contact"] != nil && refer.headers.callID == leg.callID)
        let again = leg.transfer(action, to: SIPURI("sip:dave@192.0.2.4")!, in: context)
        #expect(again.contains { if case .fail(_, let reason, _) = $0 { reason.contains("already under way") } else { false } })
    }

    @Test("sipfrag 100 keeps waiting, 200 fulfils and hangs up transferred, 486 fails with the status and the call goes on")
    func outcomes() {
        var (leg, context, _) = Self.transferring(answer: 202)
        let trying = leg.receiveNotify(Self.notify("SIP/2.0 100 Trying\r\n", to: leg), key: CallLegTable.TableContext.requestKey, in: context)
        #expect(Self.statuses(trying) == [200] && !trying.contains { if case .fulfil = $0 { true } else { false } })
        let done = leg.receiveNotify(Self.notify("SIP/2.0 200 OK", to: leg, cseq: 21), key: CallLegTable.TableContext.requestKey, in: context)
        #expect(done.contains { if case .fulfil = $0 { true } else { false } }, "a status line without its CRLF is read: \(done)")
        #expect(done.contains { if case .send(let request, .bye, _) = $0 { request.method == .bye } else { false } })
        #expect(done.contains { if case .report(.ended(_, .transferred)) = $0 { true } else { false } })
        #expect(leg.stateName == .ended)

        var (busy, busyContext, _) = Self.transferring(answer: 202)
        let refused = busy.receiveNotify(Self.notify("SIP/2.0 486 Busy Here\r\nContent-Length: 0\r\n\r\n", to: busy), key: CallLegTable.TableContext.requestKey, in: busyContext)
        let failure = refused.compactMap { if case .fail(_, let reason, let status) = $0 { (reason, status?.code) } else { nil } }.first
        #expect(failure?.0 == "the transfer target answered 486 Busy Here" && failure?.1 == 486, "\(refused)")
        #expect(busy.stateName == .confirmed)
        let stray = busy.receiveNotify(Self.notify("SIP/2.0 200 OK\r\n", to: busy, cseq: 22), key: CallLegTable.TableContext.requestKey, in: busyContext)
        #expect(Self.statuses(stray) == [481], "no transfer under way any more")
    }

    @Test("a NOTIFY that overtakes the 202 counts; another event is 489; a body that is no status line is 400 and the wait goes on")
    func badNotifies() {
        var (leg, context, _) = Self.transferring()
        let key = CallLegTable.TableContext.requestKey
        #expect(Self.statuses(leg.receiveNotify(Self.notify("SIP/2.0 200 OK\r\n", event: "presence", to: leg), key: key, in: context)) == [489])
        #expect(Self.statuses(leg.receiveNotify(Self.notify("SIP/2.0 200 OK\r\n", event: nil, to: leg, cseq: 21), key: key, in: context)) == [489])
        for (index, body) in ["INVITE sip:carol@192.0.2.3 SIP/2.0\r\n", "SIP/2.0 2000 OK", "SIP/2.0 099 Low", "", "SIP/2.0 +20 OK"].enumerated() {
            let effects = leg.receiveNotify(Self.notify(body, to: leg, cseq: 30 + UInt32(index)), key: key, in: context)
            #expect(Self.statuses(effects) == [400], "\(body.debugDescription): \(effects)")
        }
        let early = leg.receiveNotify(Self.notify("SIP/2.0 200 OK\r\n", event: "refer;id=93", to: leg, cseq: 40), key: key, in: context)
        #expect(early.contains { if case .fulfil = $0 { true } else { false } }, "before the 202, with an id: \(early)")
    }

    @Test("a refused REFER fails with its status; no answer or no final NOTIFY in time fails too; the call stays")
    func failures() {
        var (quiet, quietContext, _) = Self.transferring()
        let timedOut = quiet.requestFailed(.refer, .timeout, in: quietContext)
        #expect(timedOut.contains { if case .fail(_, let reason, _) = $0 { reason == "no answer to the REFER" } else { false } })
        var (waiting, waitingContext, _) = Self.transferring(answer: 202)
        let late = waiting.timerFired(.transferNotify, in: waitingContext)
        #expect(late.contains { if case .fail(_, let reason, _) = $0 { reason.contains("within 90 s") } else { false } }, "\(late)")
        #expect(waiting.stateName == .confirmed && quiet.stateName == .confirmed)
        // The 603 itself, as the table's context answers it.
        let table = CallLegTable.TableContext()
        var leg = CallLegTable.representative(.confirmed, in: table)
        _ = leg.transfer(.transfer(conversationUUID: leg.uuid, to: CallLegTable.transferTarget), to: SIPURI("sip:carol@192.0.2.3")!, in: table)
        let refer = CallLegTable.ourRequest(.refer, of: leg, cseq: leg.dialog?.localSequence ?? 1)
        let effects = leg.receive(CallLegTable.response(603, to: refer), to: .refer, in: table)
        #expect(effects.contains { if case .fail(_, let reason, let status) = $0 { reason.contains("603") && status?.code == 603 } else { false } })
    }

    /// The peer's REFER to our confirmed leg with these Refer-To values.
    static func refer(_ targets: [String], to leg: CallLeg, cseq: UInt32 = 50) -> SIPRequest {
        var request = CallLegTable.peerRequest(.refer, to: leg, cseq: cseq)
        for target in targets { request.headers.append("Refer-To", target) }
        return request
    }

    @Test("being transferred: 202, NOTIFY 100 (active) and the call to place; its answer: NOTIFY 200 (terminated), BYE, transferred")
    func referred() throws {
        let context = CallLegTable.TableContext()
        var leg = CallLegTable.representative(.confirmed, in: context)
        let key = CallLegTable.TableContext.requestKey
        let taken = leg.receiveRefer(Self.refer(["<sip:carol@192.0.2.3;transport=udp>"], to: leg), key: key, accepting: true, in: context)
        #expect(Self.statuses(taken) == [202])
        let notify = try #require(taken.compactMap { if case .send(let request, .notify, _) = $0 { request } else { nil } }.first)
        #expect(String(decoding: notify.body, as: UTF8.self) == "SIP/2.0 100 Trying\r\n" && notify.headers["Event"] == "refer")
        #expect(notify.headers["Subscription-State"]?.hasPrefix("active") == true)
        #expect(taken.contains { if case .transferAsked(let uri) = $0 { uri.description == "sip:carol@192.0.2.3;transport=udp" } else { false } })
        #expect(Self.statuses(leg.receiveRefer(Self.refer(["<sip:dave@192.0.2.4>"], to: leg, cseq: 51), key: key, accepting: true, in: context)) == [491])
        let done = leg.referredCallProgress(200, "OK", in: context)
        let final = try #require(done.compactMap { if case .send(let request, .notify, _) = $0 { request } else { nil } }.first)
        #expect(String(decoding: final.body, as: UTF8.self) == "SIP/2.0 200 OK\r\n" && final.headers["Subscription-State"]?.hasPrefix("terminated") == true)
        #expect(done.contains { if case .report(.ended(_, .transferred)) = $0 { true } else { false } } && leg.stateName == .ended)
    }

    @Test("a refused new call is told in the final NOTIFY and our call goes on; refused REFERs name why")
    func referRefusals() {
        let context = CallLegTable.TableContext()
        var leg = CallLegTable.representative(.confirmed, in: context)
        let key = CallLegTable.TableContext.requestKey
        _ = leg.receiveRefer(Self.refer(["<sip:carol@192.0.2.3>"], to: leg), key: key, accepting: true, in: context)
        let busy = leg.referredCallProgress(486, "Busy Here", in: context)
        #expect(busy.contains { if case .send(let request, .notify, _) = $0 { String(decoding: request.body, as: UTF8.self).hasPrefix("SIP/2.0 486") } else { false } })
        #expect(leg.stateName == .confirmed && leg.referredCallProgress(200, "OK", in: context).isEmpty, "the transfer is over")
        let cases: [([String], Bool, Int)] = [
            ([], true, 400), (["<sip:a@192.0.2.3>", "<sip:b@192.0.2.3>"], true, 400), (["<tel:+14155550100>"], true, 416),
            (["<sip:carol@192.0.2.3?Replaces=abc%3Bto-tag%3D1>"], true, 400), (["<sip:parley@192.0.2.1:5070>"], true, 403),
            (["<sip:carol@192.0.2.3>"], false, 603),
        ]
        for (index, (targets, accepting, status)) in cases.enumerated() {
            let effects = leg.receiveRefer(Self.refer(targets, to: leg, cseq: 60 + UInt32(index)), key: key, accepting: accepting, in: context)
            #expect(Self.statuses(effects) == [status], "\(targets) accepting \(accepting): \(effects)")
            #expect(!effects.contains { if case .transferAsked = $0 { true } else { false } })
        }
        let ringing = CallLegTable.representative(.ringing, in: context)
        var early = ringing
        #expect(Self.statuses(early.receiveRefer(Self.refer(["<sip:carol@192.0.2.3>"], to: early), key: key, accepting: true, in: context)) == [403])
    }

    @Test("a REFER storm: each REFER taken places a call; after 5 in one call (each new call failing at once) the next gets 403")
    func referStorm() {
        let context = CallLegTable.TableContext()
        var leg = CallLegTable.representative(.confirmed, in: context)
        let key = CallLegTable.TableContext.requestKey
        var asked = 0
        for index in 0..<8 {
            let effects = leg.receiveRefer(Self.refer(["<sip:carol\(index)@192.0.2.3>"], to: leg, cseq: 80 + UInt32(index)), key: key, accepting: true, in: context)
            if effects.contains(where: { if case .transferAsked = $0 { true } else { false } }) {
                asked += 1
                _ = leg.referredCallProgress(404, "Not Found", in: context)
            } else {
                #expect(Self.statuses(effects) == [403], "REFER \(index + 1): \(effects)")
            }
        }
        #expect(asked == CallLeg.maxRefersPerCall && leg.stateName == .confirmed)
    }

    @Test("sipfrag status lines: SIP/2.0, three digits from 100 to 699, a reason (maybe empty); anything else is none")
    func statusLines() {
        #expect(SIPFragmentStatus(body: Data("SIP/2.0 180 Ringing\r\n".utf8)) == SIPFragmentStatus(code: 180, reason: "Ringing"))
        #expect(SIPFragmentStatus(body: Data("sip/2.0 200".utf8))?.code == 200)
        #expect(SIPFragmentStatus(body: Data("SIP/2.0 503 Service Unavailable\nRetry-After: 5".utf8))?.reason == "Service Unavailable")
        #expect(SIPFragmentStatus(body: Data("SIP/2.0 700 Beyond".utf8)) == nil)
        #expect(SIPFragmentStatus(body: Data(repeating: 0x41, count: 5_000)) == nil)
        #expect(SIPFragmentStatus(body: Data([0xFF, 0xFE, 0x20])) == nil)
    }
}

extension SIPFragmentStatus {
    /// A status line, for comparing.
    init(code: Int, reason: String) {
        self = SIPFragmentStatus(body: Data("SIP/2.0 \(code) \(reason)".utf8))!
    }
}
