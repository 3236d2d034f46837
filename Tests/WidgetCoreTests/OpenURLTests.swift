import Testing
@testable import WidgetCore

@Suite struct OpenURLTests {
    @Test func theWidgetWritesItsRequestIntoTheContainer() throws {
        var widget = makeCore(.widget)
        let (id, actions) = try widget.openHostApp(url: "traffic://region", now: .zero)
        #expect(id.rawValue == WidgetCore.idText(incarnation: widget.incarnation, sequence: 1))
        #expect(actions == [.writeFile(name: "open-url-request.\(id.rawValue).json",
                                       bytes: Array(#"{"id":"\#(id.rawValue)","url":"traffic://region"}"#.utf8))])
        #expect(widget.pendingOpenURLs == [id])
    }

    @Test func theHostDeliversARequestOnceHoweverOftenItHearsOfIt() throws {
        var widget = makeCore(.widget)
        var files: [String: [UInt8]] = [:]
        let (id, actions) = try widget.openHostApp(url: "traffic://region", now: .zero)
        applyFiles(actions, to: &files)
        var host = makeCore(.host, seed: 8)
        let name = WidgetContainerLayout.openURLRequestFile(id)
        #expect(host.containerChanged(name: name, bytes: files[name], now: .zero) == [.event(.openURLRequested(WidgetOpenURLRequest(id: id, url: "traffic://region")))])
        #expect(host.containerChanged(name: name, bytes: files[name], now: .zero) == [])
        #expect(host.openURLsAwaitingAnswer.map(\.id) == [id])
    }

    @Test func theHostsAnswerIsWrittenThenTheRequestRemoved() throws {
        var host = makeCore(.host)
        let id = WidgetOpenURLID(rawValue: "0000abcd-1")
        _ = host.containerChanged(name: WidgetContainerLayout.openURLRequestFile(id),
                                  bytes: ContainerCodec.openURLRequest(WidgetOpenURLRequest(id: id, url: "traffic://x")), now: .zero)
        let actions = try host.didOpenURL(id, opened: true, now: .zero)
        #expect(actions == [
            .writeFile(name: "open-url-result.0000abcd-1.json", bytes: Array(#"{"id":"0000abcd-1","opened":true}"#.utf8)),
            .removeFile(name: "open-url-request.0000abcd-1.json"),
        ])
        #expect(!host.hasPendingWork)
        // A late copy of the request is not delivered again.
        #expect(host.containerChanged(name: WidgetContainerLayout.openURLRequestFile(id),
                                      bytes: ContainerCodec.openURLRequest(WidgetOpenURLRequest(id: id, url: "traffic://x")), now: .zero) == [])
    }

    @Test func theWidgetCompletesOnceWithTheAnswerAndRemovesIt() throws {
        var widget = makeCore(.widget)
        let (id, _) = try widget.openHostApp(url: "traffic://region", now: .zero)
        let name = WidgetContainerLayout.openURLResultFile(id)
        let answer = ContainerCodec.openURLResult(id: id, opened: true)
        #expect(widget.containerChanged(name: name, bytes: answer, now: .seconds(1)) == [.removeFile(name: name), .event(.openURLCompleted(id, opened: true))])
        #expect(widget.containerChanged(name: name, bytes: nil, now: .seconds(1)) == [])
        #expect(widget.containerChanged(name: name, bytes: answer, now: .seconds(1)) == [.removeFile(name: name), .event(.openURLResultDiscarded(id, opened: true))])
        #expect(!widget.hasPendingWork)
        #expect(widget.nextDeadline == nil)
    }

    @Test func theHostCanStillAnswerARequestTheWidgetWithdrew() throws {
        var host = makeCore(.host)
        let request = WidgetOpenURLRequest(id: WidgetOpenURLID(rawValue: "0000abcd-1"), url: "traffic://x")
        let name = WidgetContainerLayout.openURLRequestFile(request.id)
        _ = host.containerChanged(name: name, bytes: ContainerCodec.openURLRequest(request), now: .zero)
        #expect(host.containerChanged(name: name, bytes: nil, now: .seconds(10)) == [])
        #expect(host.openURLsAwaitingAnswer == [request])
        #expect(try host.didOpenURL(request.id, opened: false, now: .seconds(11)).count == 2)
    }

    @Test func aLateAnswerAfterTheTimeoutIsDiscarded() throws {
        var widget = makeCore(.widget)
        let (id, _) = try widget.openHostApp(url: "traffic://region", now: .zero)
        _ = widget.handleTimeout(now: .seconds(10))
        let name = WidgetContainerLayout.openURLResultFile(id)
        #expect(events(widget.containerChanged(name: name, bytes: ContainerCodec.openURLResult(id: id, opened: true), now: .seconds(11)))
                == [.openURLResultDiscarded(id, opened: true)])
    }

    @Test func aMalformedAnswerIsAViolationAndTheRequestStillWaits() throws {
        var widget = makeCore(.widget)
        let (id, _) = try widget.openHostApp(url: "traffic://region", now: .zero)
        let wrongID = WidgetJSON.object(["id": "someone-else", "opened": true]).encoded()
        #expect(violations(widget.containerChanged(name: WidgetContainerLayout.openURLResultFile(id), bytes: wrongID, now: .zero)) == [.malformedFile])
        #expect(widget.pendingOpenURLs == [id])
    }

    @Test func aRestartedHostDeliversUnansweredRequestsAgainAndRemovesAnsweredOnes() {
        let waiting = WidgetOpenURLRequest(id: WidgetOpenURLID(rawValue: "0000abcd-1"), url: "traffic://a")
        let answered = WidgetOpenURLRequest(id: WidgetOpenURLID(rawValue: "0000abcd-2"), url: "traffic://b")
        let files = [
            WidgetContainerLayout.openURLRequestFile(waiting.id): ContainerCodec.openURLRequest(waiting),
            WidgetContainerLayout.openURLRequestFile(answered.id): ContainerCodec.openURLRequest(answered),
            WidgetContainerLayout.openURLResultFile(answered.id): ContainerCodec.openURLResult(id: answered.id, opened: true),
        ]
        var host = makeCore(.host, files: files)
        #expect(host.nextDeadline == .zero)
        #expect(host.handleTimeout(now: .seconds(3)) == [
            .removeFile(name: WidgetContainerLayout.openURLRequestFile(answered.id)),
            .event(.openURLRequested(waiting)),
        ])
        #expect(host.openURLsAwaitingAnswer == [waiting])
    }

    @Test func aRestartedWidgetDiscardsAnswersNobodyWaitsFor() {
        let id = WidgetOpenURLID(rawValue: "0000abcd-2")
        var widget = makeCore(.widget, files: [WidgetContainerLayout.openURLResultFile(id): ContainerCodec.openURLResult(id: id, opened: false)])
        #expect(widget.handleTimeout(now: .zero) == [
            .removeFile(name: WidgetContainerLayout.openURLResultFile(id)),
            .event(.openURLResultDiscarded(id, opened: false)),
        ])
    }

    @Test func aRequestWithAnInvalidURLIsAViolationForTheHost() {
        var host = makeCore(.host)
        let id = WidgetOpenURLID(rawValue: "x-1")
        let bad = WidgetJSON.object(["id": "x-1", "url": "no scheme"]).encoded()
        #expect(violations(host.containerChanged(name: WidgetContainerLayout.openURLRequestFile(id), bytes: bad, now: .zero)) == [.malformedFile])
        #expect(host.openURLsAwaitingAnswer.isEmpty)
    }
}
