import Collaboration
import ControlProtocol
import Foundation
import ParleyEngine

/// The collaboration methods (docs/collaboration.md) and the events of collaborations.
extension ControlService {
    func serveCollaboration(_ command: ControlCommand, id: ControlRequestID, reply: @escaping @Sendable (Data) -> Void) throws(ControlError) {
        switch command {
        case .identity:
            guard let identity = engine.identity else { throw ControlError(.unavailable, "The engine is not running.") }
            reply(ControlMessage.result(IdentityResult(identity), id: id))
        case .collaborations:
            reply(ControlMessage.result(CollaborationsResult(collaborations: engine.collaborations.map(CollaborationData.init)), id: id))
        case .collaborationStart(let params):
            let uuid = try conversation(params.conversation)
            let metadata = params.metadata(initiator: nil)
            let info = try Self.value(engine.startCollaboration(metadata, on: uuid, url: params.url, confirmUpdates: params.confirmUpdates ?? false))
            reply(ControlMessage.result(CollaborationData(info), id: id))
        case .collaborationOpen(let params):
            try Self.value(engine.openCollaboration(Self.id(params.collaboration)))
            guard let info = engine.collaborations.first(where: { $0.highlight.identifier == Self.id(params.collaboration) }) else {
                throw ControlError(collaboration: .unknownCollaboration(Self.id(params.collaboration)))
            }
            reply(ControlMessage.result(CollaborationData(info), id: id))
        case .collaborationChallenge(let params):
            reply(ControlMessage.result(try Self.value(engine.collaborationChallenge(Self.id(params.collaboration))), id: id))
        case .collaborationProve(let challenge):
            reply(ControlMessage.result(SignedProofJSON(try Self.value(engine.proveCollaboration(challenge))), id: id))
        case .collaborationVerify(let params):
            let root = try Self.value(engine.verifyCollaborationProof(params.proof.proof, nonce: params.nonce, for: Self.id(params.collaboration)))
            reply(ControlMessage.result(CollaborationGranted(collaboration: Self.id(params.collaboration), root: root.hex), id: id))
        case .collaborationConfirm(let params):
            try Self.value(engine.confirmCollaborationUpdate(params.action, accept: params.accept))
            reply(ControlMessage.result(CollaborationConfirmed(action: params.action, accepted: params.accept), id: id))
        case .collaborationNotice(let params):
            guard let event = params.event else { throw ControlError(.invalidParams, "No such notice.", field: "kind") }
            try Self.value(engine.postCollaborationNotice(event, for: Self.id(params.collaboration)))
            reply(ControlMessage.result(CollaborationPosted(collaboration: Self.id(params.collaboration), posted: true), id: id))
        case .collaborationEnd(let params):
            try Self.value(engine.endCollaboration(Self.id(params.collaboration)))
            reply(ControlMessage.result(CollaborationEnded(collaboration: Self.id(params.collaboration), state: "ended"), id: id))
        case .identityUpdateProve(let params):
            let old = params.oldDevices.compactMap(Hex.decode), new = params.newDevices.map { $0.compactMap(Hex.decode) }
            let (oldRoot, newRoot, proof) = try Self.value(engine.proveIdentityUpdate(oldDevices: old, newDevices: new, challenge: params.challenge))
            reply(ControlMessage.result(IdentityUpdateProof(oldRoot: oldRoot.hex, newRoot: newRoot.hex, proof: SignedProofJSON(proof)), id: id))
        case .collaborationReplaceIdentity(let params):
            guard let old = PersonIdentity(hex: params.oldRoot), let new = PersonIdentity(hex: params.newRoot) else {
                throw ControlError(.invalidParams, "Roots must be 64 hex digits.", field: "oldRoot")
            }
            let root = try Self.value(engine.replaceCollaborationIdentity(
                old, with: new, proof: params.proof.proof, nonce: params.nonce, for: Self.id(params.collaboration)))
            reply(ControlMessage.result(CollaborationGranted(collaboration: Self.id(params.collaboration), root: root.hex), id: id))
        default:
            preconditionFailure("not a collaboration method: \(command.method)")
        }
    }

    /// The event a collaboration effect is, if any.
    static func collaborationEvent(_ effect: CollaborationEffect) -> ControlEventMessage? {
        switch effect {
        case .changed(let info):
            return .collaborationChanged(CollaborationChanged(collaboration: CollaborationData(info)))
        case .handle(let action):
            return .collaborationParticipantsUpdate(CollaborationUpdateEvent(action))
        case .actionCompleted(let action, let outcome):
            return .collaborationActionCompleted(CollaborationActionCompleted(action, outcome))
        case .verified(let collaboration, let participant, let result):
            return .collaborationVerified(CollaborationVerified(collaboration: collaboration, participant: participant, result: result))
        case .notice(let notice):
            return .collaborationNotice(CollaborationNoticeEvent(notice))
        case .identityLearned(let session, let participant, let identity):
            return .identityAnnounced(IdentityAnnounced(session: session, participant: participant.id, name: participant.name, root: identity.hex))
        case .send, .log:
            return nil
        }
    }

    /// The value, or the collaboration's refusal as a control error.
    @discardableResult
    static func value<Value>(_ result: Result<Value, CollaborationError>) throws(ControlError) -> Value {
        switch result {
        case .success(let value): return value
        case .failure(let error): throw ControlError(collaboration: error)
        }
    }
}
