import Foundation

extension ParleyEngine {
    /// From now on `demand` says whether anyone wants audio levels (the control API: a subscriber that asked for
    /// them); the media layer measures them only while it says yes.
    public func setAudioLevelDemand(_ demand: @escaping @Sendable () -> Bool) {
        audioLevelDemand.withLock { $0 = demand }
    }

    /// Whether anyone wants audio levels now (any thread).
    public var wantsAudioLevels: Bool { audioLevelDemand.withLock { $0 }() }

    /// A call's audio levels from the media layer (any thread), announced as an `audioLevels` event; a reading
    /// that comes after the call left is dropped.
    public func receivedAudioLevels(heard: Int?, said: Int?, for conversationUUID: UUID) {
        guard observed.state.withLock({ $0.states[conversationUUID] != nil }) else { return }
        emit(.audioLevels(conversationUUID, heard: heard, said: said))
    }
}
