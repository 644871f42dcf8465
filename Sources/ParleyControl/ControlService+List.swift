import ControlProtocol
import ConversationKit
import Foundation

/// `list`, paged: the live conversations oldest first, a page at a time, so that the reply fits the client's queue
/// however many calls ring (40,000 ringing calls are 200 pages of 200, not one 30 MB line). The cursor is the
/// manager's position after the page's last conversation: a page costs its own size, and conversations that end
/// between pages shift nothing.
extension ControlService {
    /// The page of live conversations after `params.cursor`.
    func listPage(_ params: ListParams) throws(ControlError) -> ListResult {
        var position: ConversationPosition?
        if let cursor = params.cursor {
            // "EPOCH.POSITION": a cursor from an earlier run of parleyd (positions start again) is refused.
            let parts = cursor.split(separator: ".", maxSplits: 1)
            guard parts.count == 2, parts[0] == listEpoch, let parsed = ConversationPosition(String(parts[1])) else {
                throw ControlError(.invalidParams, "\"cursor\" is not a cursor this parleyd gave.", field: "cursor")
            }
            position = parsed
        }
        let page = engine.manager.conversations(after: position, limit: params.limit ?? ListParams.defaultLimit)
        return ListResult(
            conversations: page.conversations.map { info(for: $0) },
            nextCursor: page.next.map { "\(listEpoch).\($0)" }, total: page.total)
    }
}
