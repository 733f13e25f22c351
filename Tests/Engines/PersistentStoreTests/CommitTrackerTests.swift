import Testing

@testable import PersistentStoreCore

/// The open transaction's way to its COMMIT: what a lost server's recovery reads at each step.
@Suite struct CommitTrackerTests {
    @Test func aCommitGoesFromOpenToSentToCommitted() {
        var tracker = CommitTracker()
        #expect(tracker.state == .idle && !tracker.outcomeUnknown)
        tracker.began(id: "c1")
        // Open: its id is recorded with it; lost now, nothing was sent: run it again.
        #expect(tracker.openID == "c1" && !tracker.outcomeUnknown && tracker.sentID == nil)
        tracker.sending(token: 42)
        // Sent: lost now, the outcome is unknown and the id is looked up on the new primary.
        #expect(tracker.outcomeUnknown && tracker.sentID == "c1" && tracker.openID == nil)
        #expect(tracker.committed() == 42)
        #expect(tracker.state == .committed(token: 42) && !tracker.outcomeUnknown)
        // The next transaction starts afresh.
        tracker.began(id: nil)
        #expect(tracker.state == .open(id: nil))
    }

    @Test func sendingIsOnlyFromAnOpenTransactionAndResetForgets() {
        var tracker = CommitTracker()
        tracker.sending(token: 1)
        #expect(tracker.state == .idle, "nothing open: nothing to send")
        tracker.began(id: "c2")
        tracker.sending(token: nil)
        tracker.reset()
        #expect(tracker.state == .idle && !tracker.outcomeUnknown && tracker.committed() == nil)
    }
}
