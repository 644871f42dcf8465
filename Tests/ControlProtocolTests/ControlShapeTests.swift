import CallHistory
import ControlProtocol
import ConversationKit
import Foundation
import GroupActivities
import Testing

/// The tables of docs/control-api.md against the types they are generated from: every member parleyd sends is in its
/// object's table, with the type the table says, and every object a member names has a table of its own.
@Suite("Control protocol: every object's table matches what is sent")
struct ControlShapeTests {
    static let shapes = ControlReference.allShapes.map(ShapeCase.init)

    /// One shape, named for the test list.
    struct ShapeCase: CustomTestStringConvertible, Sendable {
        let shape: any ControlShape.Type
        init(_ shape: any ControlShape.Type) { self.shape = shape }
        var testDescription: String { "\(shape)" }
    }

    @Test("each shape's examples encode to exactly its documented members, of the documented types", arguments: shapes)
    func examplesMatchTheTable(_ shape: ShapeCase) {
        #expect(shape.shape.driftProblems() == [])
    }

    @Test("every object a member holds is a named shape with a table, and every named shape is used")
    func namedShapesAreClosed() {
        var referenced = Set<ObjectIdentifier>()
        for shape in ControlReference.allShapes {
            for field in shape.fields {
                for inner in field.valueType?.shapes ?? [] {
                    referenced.insert(ObjectIdentifier(inner))
                    #expect(ControlReference.isNamed(inner), "\(shape).\(field.name) holds \(inner), which has no table under Shapes")
                }
            }
        }
        let results = Set(ControlMethodName.allCases.map { ObjectIdentifier(ControlReference.resultShape(of: $0)) })
        let data = Set(ControlEventMessage.Name.allCases.map { ObjectIdentifier(ControlReference.dataShape(of: $0)) })
        for shape in ControlReference.namedShapes {
            let id = ObjectIdentifier(shape)
            #expect(referenced.contains(id) || results.contains(id) || data.contains(id), "\(shape) is named but nothing sends it")
        }
    }

    @Test("the checker finds what drift looks like: an undocumented member, a missing one, a wrong type, a stray word")
    func checkerCatchesDrift() {
        let problems = Drifted.driftProblems()
        #expect(problems.contains { $0.contains(".extra is sent but not documented") }, "\(problems)")
        #expect(problems.contains { $0.contains(".ghost is documented but not sent") }, "\(problems)")
        #expect(problems.contains { $0.contains(".jitterMs: 0.4 is not an integer") }, "\(problems)")
        #expect(problems.contains { $0.contains(".state: \"ringin\" is not one of") }, "\(problems)")
        #expect(problems.contains { $0.contains(".when: \"yesterday\" is not a timestamp") }, "\(problems)")
    }

    @Test("the reference's history status of each ended reason is what the history records")
    func historyStatuses() {
        for reason in Conversation.EndedReason.allCases {
            let documented = ControlReference.historyStatus(of: reason)
            #expect(CallStatus(direction: .incoming, connected: false, reason: reason).rawValue == documented.incoming, "\(reason)")
            #expect(CallStatus(direction: .outgoing, connected: false, reason: reason).rawValue == documented.outgoing, "\(reason)")
            #expect(CallStatus(direction: .incoming, connected: true, reason: reason) == .connected)
        }
    }

    @Test("type words follow the documented grammar")
    func typeWords() {
        #expect(ControlType.nullable(.oneOf(["a", "b", "c"])).phrase == "a string or null: `a`, `b` or `c`")
        #expect(ControlType.array(.object(GroupActivity.self)).phrase == "an array of activities")
        #expect(ControlType.dictionary(.integer).phrase == "an object of integers by name")
        #expect(ControlType.nullable(.timestamp).phrase == "a timestamp or null")
    }
}

/// A shape whose table and values disagree in every way the checker must notice.
private struct Drifted: ControlShape {
    var state = "ringin"
    var jitterMs = 0.4
    var when = "yesterday"
    var extra = 1

    static let noun = ControlNoun("a drifted thing", plural: "drifted things")
    static let fields = [
        ControlField("state", .oneOf(["ringing", "joined"]), "a state"),
        ControlField("jitterMs", .integer, "whole milliseconds"),
        ControlField("when", .timestamp, "a time"),
        ControlField("ghost", .string, "documented, never sent"),
    ]
    static let examples = [Drifted()]
}
