import Foundation
import GroupActivities

/// One input: a script against a host's group messenger with two members, a Parley peer (A) and a plain softphone
/// (B), in a merged call. Each step is a byte and its operands: a MESSAGE body received on a leg (as the group JSON
/// type, text, or another type), a final answer (any status, with or without Retry-After) or a failure of what is in
/// flight, a resume, a local send, time passing, or a leg changing (unmerged, dropped, ended, back). Nothing may
/// crash, every answer a received body gets is one the messenger documents, a leg never holds more than one
/// transmission at once, and what waits on a leg stays bounded (its byte cap keeps it to a few thousand messages).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGroup(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    var script = GroupScript(Array(UnsafeBufferPointer(start: data, count: size)))
    script.run()
    return 0
}

struct GroupScript {
    static let legA = UUID(uuidString: "00000000-0000-0000-0000-00000000000A")!
    static let legB = UUID(uuidString: "00000000-0000-0000-0000-00000000000B")!
    static let group = UUID(uuidString: "00000000-0000-0000-0000-0000000000FF")!
    static let types = [GroupWire.contentType, "text/plain;charset=utf-8", "application/octet-stream"]

    var bytes: ArraySlice<UInt8>
    var messenger = GroupMessenger(localName: "Host")
    var now = Duration.zero
    var inFlight: [UUID: UInt64] = [:]
    /// Legs whose conversation ended: a uuid never comes back.
    var ended: Set<UUID> = []

    init(_ bytes: [UInt8]) { self.bytes = bytes[...] }

    mutating func byte() -> UInt8 { bytes.popFirst() ?? 0 }

    mutating func take(_ effects: [GroupEffect]) {
        for effect in effects {
            guard case .transmit(let leg, let transmission) = effect else { continue }
            precondition(inFlight[leg] == nil, "two MESSAGEs in flight on one leg")
            inFlight[leg] = transmission.token
        }
    }

    mutating func leg(_ uuid: UUID, format: GroupLegFormat, group: UUID?, connected: Bool) {
        take(messenger.legChanged(
            .init(uuid: uuid, name: uuid == Self.legA ? "A" : "B", format: format, isStream: false, group: group, isConnected: connected),
            now: now))
    }

    mutating func run() {
        leg(Self.legA, format: .json, group: Self.group, connected: true)
        leg(Self.legB, format: .text, group: Self.group, connected: true)
        take(messenger.activate(GroupActivity(identifier: "f", title: "F"), on: Self.legA, sessionID: "S", localID: "h", now: now).effects)
        var steps = 0
        while !bytes.isEmpty && steps < 256 {
            steps += 1
            let op = byte()
            let legID = op & 0x80 == 0 ? Self.legA : Self.legB
            if ended.contains(legID) && op % 9 == 7 { continue }
            switch op % 9 {
            case 0, 1:
                let count = Int(byte()) * 4
                let body = Data(bytes.prefix(count))
                bytes = bytes.dropFirst(count)
                let (status, effects) = messenger.receive(body, contentType: Self.types[Int(op >> 4) % 3], on: legID, now: now)
                precondition([200, 400, 403, 413, 415, 503].contains(status), "a body got \(status)")
                take(effects)
            case 2:
                guard let token = inFlight.removeValue(forKey: legID) else { continue }
                let status = 100 + Int(byte()) * 2 + Int(byte() % 2)
                let retryAfter: Duration? = byte() % 2 == 0 ? nil : .seconds(Int(byte() % 90))
                take(messenger.answered(leg: legID, token: token, status: status, retryAfter: retryAfter, now: now))
                if status < 200 { inFlight[legID] = token }
            case 3:
                guard let token = inFlight.removeValue(forKey: legID) else { continue }
                take(messenger.failed(leg: legID, token: token, now: now))
            case 4:
                take(messenger.resume(leg: legID, now: now))
            case 5:
                let count = Int(byte())
                let text = String(decoding: bytes.prefix(count), as: UTF8.self)
                bytes = bytes.dropFirst(count)
                let type = byte() % 2 == 0 ? "text" : "app.x"
                let mode: GroupDeliveryMode = byte() % 3 == 0 ? .unreliable : .reliable
                take(messenger.send(.string(text), type: type, mode: mode, keep: op & 0x40 != 0, in: "S", now: now).effects)
            case 6:
                now += .milliseconds(Int(byte()) * 20)
            case 7:
                let change = byte() % 4
                if change == 3 {
                    take(messenger.legEnded(legID, now: now))
                    inFlight[legID] = nil
                    ended.insert(legID)
                } else {
                    leg(legID, format: legID == Self.legA ? .json : .text, group: change == 0 ? nil : Self.group, connected: change != 2)
                }
            default:
                take(messenger.end("S", now: now))
                take(messenger.activate(GroupActivity(identifier: "g", title: "G"), on: Self.legA, sessionID: "S\(steps)", localID: "h", now: now).effects)
            }
            for leg in [Self.legA, Self.legB] { precondition(messenger.queued(on: leg) <= 5_000, "an unbounded queue") }
        }
    }
}
