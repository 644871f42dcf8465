import Foundation

/// Receives everything a ``ConversationManager`` has to say, in order, one callback at a time.
///
/// Callbacks never overlap and never arrive while the manager holds its lock, so a delegate may call back into
/// the manager (fulfil an action from `perform`, report an event) from inside any callback; such calls take
/// effect at once and their own callbacks follow after the current one returns.
public protocol ConversationManagerDelegate: AnyObject, Sendable {
    /// The delegate was attached; the manager is ready.
    func conversationManagerDidBegin(_ manager: ConversationManager)
    /// The manager was invalidated: every conversation has ended; tear down all media.
    func conversationManagerDidReset(_ manager: ConversationManager)
    /// A conversation changed (state, members, capabilities, mute, group).
    func conversationManager(_ manager: ConversationManager, conversationChanged conversation: Conversation)
    /// Do what `action` asks, then call `fulfill` or `fail` on it (now or later, from any thread).
    func conversationManager(_ manager: ConversationManager, perform action: ConversationAction)
    /// `action` reached its timeout date before it completed. A Start, Join or End that times out ends its
    /// conversation as failed.
    func conversationManager(_ manager: ConversationManager, timedOutPerforming action: ConversationAction)
    /// Media for `conversation` should start: it entered joining, joined or paused from a state without media.
    func conversationManager(_ manager: ConversationManager, didActivateMediaFor conversation: Conversation)
    /// Media for `conversation` should stop: it left joining, joined and paused.
    func conversationManager(_ manager: ConversationManager, didDeactivateMediaFor conversation: Conversation)
    /// An action performed through this manager settled (complete, failed or timed out), told after the other
    /// callbacks of the change that settled it (on the thread delivering the manager's callbacks, normally the one
    /// that settled it); the same news its `whenSettled` handlers get, without a hop to the settlement queue.
    func conversationManager(
        _ manager: ConversationManager, didSettle action: ConversationAction, as state: ConversationAction.State)
}

extension ConversationManagerDelegate {
    /// Does nothing by default.
    public func conversationManagerDidBegin(_ manager: ConversationManager) {}
    /// Does nothing by default.
    public func conversationManagerDidReset(_ manager: ConversationManager) {}
    /// Does nothing by default.
    public func conversationManager(_ manager: ConversationManager, timedOutPerforming action: ConversationAction) {}
    /// Does nothing by default.
    public func conversationManager(_ manager: ConversationManager, didActivateMediaFor conversation: Conversation) {}
    /// Does nothing by default.
    public func conversationManager(_ manager: ConversationManager, didDeactivateMediaFor conversation: Conversation) {}
    /// Does nothing by default.
    public func conversationManager(
        _ manager: ConversationManager, didSettle action: ConversationAction, as state: ConversationAction.State
    ) {}
}
