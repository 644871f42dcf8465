import Foundation
import ControlChannel

/// The web softphone parleyd serves on its `--websocket` port: plain HTML, CSS and ES modules (Site/), embedded in
/// the binary at build time (SwiftPM `embedInCode`), so nothing is read from disk at run time. The page is a view
/// of the daemon over the control API at `/ws`; calls and registration live in parleyd.
public enum WebSoftphone {
    /// The files by path, and the socket path.
    public static let site = WebSite(pages: [
        "/": page("index.html", PackageResources.index_html),
        "/app.css": page("app.css", PackageResources.app_css),
        "/app.js": page("app.js", PackageResources.app_js),
        "/connection.js": page("connection.js", PackageResources.connection_js),
        "/calls.js": page("calls.js", PackageResources.calls_js),
        "/dial.js": page("dial.js", PackageResources.dial_js),
        "/recents.js": page("recents.js", PackageResources.recents_js),
        "/alerts.js": page("alerts.js", PackageResources.alerts_js),
        "/dom.js": page("dom.js", PackageResources.dom_js),
        "/groups.js": page("groups.js", PackageResources.groups_js),
        "/audio.js": page("audio.js", PackageResources.audio_js),
        "/icon.svg": page("icon.svg", PackageResources.icon_svg),
    ])

    private static func page(_ name: String, _ bytes: [UInt8]) -> WebPage {
        WebPage(contentType: WebPage.contentType(forFileName: name), body: Data(bytes))
    }
}
