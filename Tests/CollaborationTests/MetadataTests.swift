import Collaboration
import Foundation
import Testing

@Suite struct MetadataTests {
    func options(editSelected: Bool = true, readOnlySelected: Bool = false, commentsRequire: [String] = []) -> CollaborationShareOptions {
        CollaborationShareOptions(optionsGroups: [
            CollaborationOptionsGroup(identifier: "permission", isPicker: true, options: [
                CollaborationOption(title: "Can make changes", identifier: "edit", isSelected: editSelected),
                CollaborationOption(title: "Read only", identifier: "read", isSelected: readOnlySelected),
            ]),
            CollaborationOptionsGroup(identifier: "extras", options: [
                CollaborationOption(title: "Allow comments", identifier: "comments", isSelected: true, requiredOptionsIdentifiers: commentsRequire),
                CollaborationOption(title: "Allow mentions", identifier: "mentions", isSelected: false),
            ]),
        ])
    }

    @Test func aPickerNeedsExactlyOneSelection() {
        #expect(options().validate() == nil)
        #expect(options(editSelected: true, readOnlySelected: true).validate() == .invalidMetadata(
            "picker group 'permission' has 2 selected options (exactly one must be)"))
        #expect(options(editSelected: false).validate() != nil)
    }

    @Test func switchesAreIndependentButRequirementsHold() {
        #expect(options(commentsRequire: ["edit"]).validate() == nil)
        #expect(options(commentsRequire: ["mentions"]).validate() == .invalidMetadata(
            "option 'comments' requires 'mentions', which is not selected"))
        #expect(options().isSelected("comments") && !options().isSelected("mentions"))
    }

    @Test func identifiersAreUniqueAndMetadataBounded() {
        var repeated = options()
        repeated.optionsGroups[1].options[1].identifier = "edit"
        #expect(repeated.validate() != nil)
        var metadata = CollaborationMetadata(localIdentifier: "doc-1", title: "Trip plan", userSelectedShareOptions: repeated)
        #expect(metadata.validate() != nil)
        metadata.userSelectedShareOptions = options()
        #expect(metadata.validate() == nil)
        metadata.localIdentifier = ""
        #expect(metadata.validate() != nil)
    }

    @Test func recipientsDoNotSeeTheInitiatorsHandleOrName() throws {
        let metadata = CollaborationMetadata(
            localIdentifier: "doc-1", title: "Trip plan", initiatorHandle: "sip:alice@example.org",
            initiatorNameComponents: PersonNameComponents(givenName: "Alice"), defaultShareOptions: options())
        let shared = metadata.forRecipients
        #expect(shared.initiatorHandle == nil && shared.initiatorNameComponents == nil && shared.title == "Trip plan")
        let decoded = try JSONDecoder().decode(CollaborationMetadata.self, from: JSONEncoder().encode(metadata))
        #expect(decoded == metadata)
        let text = #"{"identifier":"g","picker":true,"options":[{"title":"A","identifier":"a","selected":true}]}"#
        let group = try JSONDecoder().decode(CollaborationOptionsGroup.self, from: Data(text.utf8))
        #expect(group.isPicker && group.options[0].isSelected && group.options[0].requiredOptionsIdentifiers.isEmpty)
    }
}
