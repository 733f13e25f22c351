import Foundation
import TestSupport
import Testing

/// Tests that wait on processes must not hold the cooperative pool: `.blocking` moves them.
@Suite(.blocking) struct BlockingSuiteTests {
    @Test func aSynchronousTestRunsOnABlockingThread() {
        #expect(BlockingThreads.isCurrent)
    }

    @Test(arguments: [1, 2])
    func anAsyncTestStaysThereAcrossSuspensions(_ pause: Int) async throws {
        #expect(BlockingThreads.isCurrent)
        try await Task.sleep(for: .milliseconds(pause))
        #expect(BlockingThreads.isCurrent)
    }
}

@Suite struct UnmarkedSuiteTests {
    @Test func anUnmarkedTestRunsOnTheCooperativePool() {
        #expect(!BlockingThreads.isCurrent)
    }
}
