import Foundation
import ParleyEngine
import Testing

/// The ringer's decisions (issue 49): which sound the calls' states and early media ask for.
@Suite("Engine: the ringer (ringtone and ringback)")
struct RingerTests {
    let first = UUID(), second = UUID()

    @Test("an incoming call rings until it is answered; another ringing call keeps the ringtone until it ends too")
    func incoming() {
        var ringer = Ringer()
        #expect(ringer.conversationChanged(first, direction: .incoming, state: .idle) == [])
        #expect(ringer.conversationChanged(first, direction: .incoming, state: .ringing) == [.play(.ringtone)])
        #expect(ringer.conversationChanged(second, direction: .incoming, state: .ringing) == [])
        #expect(ringer.conversationChanged(first, direction: .incoming, state: .joining) == [], "the second still rings")
        #expect(ringer.conversationChanged(second, direction: .incoming, state: .left) == [.stop], "declined or cancelled")
        #expect(ringer.conversationChanged(first, direction: .incoming, state: .joined) == [])
        #expect(ringer.playing == nil)
    }

    @Test("silencing stops the ringtone of that call only; a call that does not ring cannot be silenced")
    func silence() {
        var ringer = Ringer()
        _ = ringer.conversationChanged(first, direction: .incoming, state: .ringing)
        _ = ringer.conversationChanged(second, direction: .incoming, state: .ringing)
        #expect(ringer.silence(first) == (true, []), "the second still rings")
        #expect(ringer.silence(second) == (true, [.stop]))
        #expect(ringer.silence(UUID()) == (false, []))
        #expect(ringer.conversationChanged(first, direction: .incoming, state: .left) == [])
        let third = UUID()
        #expect(ringer.conversationChanged(third, direction: .incoming, state: .ringing) == [.play(.ringtone)], "a new call rings")
    }

    @Test("an outgoing call that rings at the far end plays the ringback until early media, the answer or the end")
    func ringback() {
        var ringer = Ringer()
        #expect(ringer.conversationChanged(first, direction: .outgoing, state: .idle) == [])
        #expect(ringer.conversationChanged(first, direction: .outgoing, state: .ringing) == [.play(.ringback)])
        #expect(ringer.mediaChanged(first, hasAudio: true) == [.stop], "early media: the far end's own ringing")
        #expect(ringer.conversationChanged(first, direction: .outgoing, state: .joined) == [])
        #expect(ringer.conversationChanged(second, direction: .outgoing, state: .ringing) == [.play(.ringback)])
        #expect(ringer.conversationChanged(second, direction: .outgoing, state: .joined) == [.stop], "answered")
        let third = UUID()
        #expect(ringer.mediaChanged(third, hasAudio: true) == [], "a 183 with SDP before any 180")
        #expect(ringer.conversationChanged(third, direction: .outgoing, state: .ringing) == [])
    }

    @Test("an incoming call's ringtone wins over a ringback, which comes back when the incoming call stops ringing")
    func both() {
        var ringer = Ringer()
        _ = ringer.conversationChanged(first, direction: .outgoing, state: .ringing)
        #expect(ringer.conversationChanged(second, direction: .incoming, state: .ringing) == [.stop, .play(.ringtone)])
        #expect(ringer.conversationChanged(second, direction: .incoming, state: .left) == [.stop, .play(.ringback)])
        #expect(ringer.conversationChanged(first, direction: .outgoing, state: .left) == [.stop])
    }
}
