import ConversationKit
import Foundation
import SIPMessages

/// How SIP addresses become conversation handles and back.
///
/// A SIP URI whose user part is a telephone number (`+14155550100`, `4155550100`, or any with `user=phone`) is a
/// phone-number handle holding the URI (`sip:+14155550100@host[;user=phone]`, dialled back as it is; matched by
/// the number); every other `sip:`/`sips:` address is a generic handle holding the URI
/// `sip:user@host[:port]` (without parameters), so that it can be dialled back as it is. A `tel:` URI is a phone
/// number. The display name comes from the header's display name, else the handle's value.
enum HandleMapping {
    /// The handle for a From/To address.
    static func handle(for address: SIPAddress) -> Handle {
        let uri = address.uri
        let name = address.displayName.flatMap { $0.isEmpty ? nil : $0 }
        if uri.scheme == "tel", let number = uri.opaquePart {
            return Handle(kind: .phoneNumber, value: number, displayName: name ?? number)
        }
        if let user = uri.user, HandleNormalizer.looksLikeTelephoneNumber(user) || uri.parameters["user"] == "phone" {
            // The whole URI stays the value, so that calling back reaches exactly this address; the number inside
            // is what contacts and history match on (HandleNormalizer reads it out of the URI).
            let value = uri.parameters["user"] == "phone" ? dialString(uri) + ";user=phone" : dialString(uri)
            return Handle(kind: .phoneNumber, value: value, displayName: name ?? user)
        }
        let value = dialString(uri)
        return Handle(kind: .generic, value: value, displayName: name ?? value)
    }

    /// The caller of a request: the handle of its From, except that a From without a port whose user and host are
    /// the Contact's takes the Contact's port — a UA that is not registered (it calls from its own address, as
    /// parleyd does) can only be called back there, and contacts and history keep naming it as before.
    static func caller(from: SIPAddress, contact: SIPAddress?) -> Handle {
        var address = from
        if from.uri.port == nil, let contact = contact?.uri, let port = contact.port, contact.user == from.uri.user,
            contact.host.lowercased() == from.uri.host.lowercased(), from.uri.scheme != "tel"
        {
            address.uri.port = port
        }
        return handle(for: address)
    }

    /// `sip:user@host:port` without parameters.
    static func dialString(_ uri: SIPURI) -> String {
        var bare = uri
        bare.parameters = []
        bare.headers = []
        bare.password = nil
        return bare.description
    }

    /// The URI to call for `handle`: a SIP URI as written (generic or email-like handles holding one), a phone
    /// number at `phoneDomain`. Nil with a reason when the handle cannot be dialled.
    static func uri(for handle: Handle, phoneDomain: String?) -> Result<SIPURI, HandleDialError> {
        let value = handle.value.trimmingCharacters(in: .whitespaces)
        switch handle.kind {
        case .phoneNumber:
            if let uri = SIPURI(value), uri.isSIP, uri.scheme == "sip" || uri.scheme == "sips" { return .success(uri) }
            let digits = value.filter { $0.isNumber || $0 == "+" }
            guard !digits.isEmpty else { return .failure(HandleDialError("\(value) is not a phone number")) }
            guard let phoneDomain, let uri = SIPURI("sip:\(digits)@\(phoneDomain);user=phone") else {
                return .failure(HandleDialError("no domain to dial phone number \(value) at (set a phone domain)"))
            }
            return .success(uri)
        case .emailAddress, .generic:
            let text = value.hasPrefix("sip:") || value.hasPrefix("sips:") ? value : "sip:" + value
            guard let uri = SIPURI(text), uri.isSIP, uri.scheme == "sip" || uri.scheme == "sips", !uri.host.isEmpty
            else { return .failure(HandleDialError("\(value) is not a SIP address")) }
            return .success(uri)
        }
    }
}

/// Why a handle cannot be turned into a SIP URI.
package struct HandleDialError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
