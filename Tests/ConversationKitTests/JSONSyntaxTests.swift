import ConversationKit
import Foundation
import Testing

@Suite("JSON syntax positions")
struct JSONSyntaxTests {
    @Test("valid JSON has no problem; a broken one names line and column")
    func positions() {
        #expect(JSONSyntax.problem(in: Data(#"{"a": [1, 2]}"#.utf8)) == nil)
        #expect(JSONSyntax.problem(in: Data("{\n  \"a\": [1,\n   ,2]}".utf8)) == "Invalid value at line 3, column 4")
        #expect(JSONSyntax.problem(in: Data(#"{"a": }"#.utf8)) == "Invalid value at line 1, column 7")
        #expect(JSONSyntax.problem(in: Data(#"{"a": 1"#.utf8))?.isEmpty == false)
    }
}
