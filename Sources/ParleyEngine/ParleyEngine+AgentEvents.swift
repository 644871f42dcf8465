import CallHistory
import Foundation

extension ParleyEngine {
    /// One fact from the user agent (``AgentEvent``, on the environment's thread): what the engine keeps about live
    /// calls, and the ``EngineEvent`` views hear.
    func heard(_ event: AgentEvent) {
        switch event {
        case .callCreated(let uuid, let callID):
            observed.state.withLock {
                $0.callIDs[uuid] = callID
                $0.uuids[callID] = uuid
            }
        case .callRefused(let uuid, let callID):
            observed.state.withLock {
                $0.callIDs[uuid] = nil
                $0.uuids[callID] = nil
            }
        case .registrationChanged(let account, let state):
            emit(.registrationChanged(account, state))
        case .tonesReceived(let uuid, let digits):
            emit(.tonesReceived(uuid, digits: digits))
        case .transferProgress(let uuid, let status, let final, let transferee):
            emit(.transferProgress(uuid, status, final: final, transferee: transferee))
        case .mediaChanged(let uuid, let audio, let video):
            observed.state.withLock {
                $0.audio[uuid] = audio
                $0.video[uuid] = video
            }
            emit(.mediaChanged(uuid, audio, video: video))
        case .finalStatistics(let uuid, let quality):
            observed.keep(quality, for: uuid)
        case .finalStatus(let uuid, let status):
            // Only for a live conversation (a 487 to our CANCEL may come after it left): removed when it leaves.
            observed.state.withLock { if $0.states[uuid] != nil { $0.finalStatuses[uuid] = status } }
        case .failure(let uuid, let failure):
            observed.state.withLock { if $0.states[uuid] != nil { $0.failures[uuid] = failure } }
        case .callerBlocked(let caller, let callID, let account), .refusedByDoNotDisturb(let caller, let callID, let account),
            .forwarded(let caller, let callID, let account):
            let status: CallStatus = switch event {
            case .refusedByDoNotDisturb: .doNotDisturb
            case .forwarded: .forwarded
            default: .blocked
            }
            history?.recordBlocked(caller, to: localHandle, callID: callID, account: account, at: environment.now, status: status) {
                [weak self] record in
                if let record { self?.emit(.historyRecorded(record.uuid, recordID: record.id)) }
            }
        }
    }
}
