import HandoffDiscovery
import HandoffSystem
import Synchronization

/// The local network's discovery (Avahi) and a unicast zone's (`WideAreaDiscovery`) as one backend: both
/// advertise the same record under the same name, both report to one stream, and what one of
/// them cannot do (Avahi away, the DNS server down) leaves the other working.
public final class CombinedDiscovery: DiscoveryBackend {
    private let local: any DiscoveryBackend
    private let wideArea: WideAreaDiscovery
    private let pump = Mutex<Task<Void, Never>?>(nil)

    public init(local: any DiscoveryBackend, wideArea: WideAreaDiscovery) {
        self.local = local
        self.wideArea = wideArea
    }

    public func start(browseDomains: [String]) async -> AsyncStream<DiscoveryEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: DiscoveryEvent.self)
        let sources = [await local.start(browseDomains: browseDomains), await wideArea.start(browseDomains: [])]
        let pump = Task(executorPreference: ProgramExecutor.current) {
            await withDiscardingTaskGroup { group in
                for source in sources {
                    group.addTask { for await event in source { continuation.yield(event) } }
                }
            }
            continuation.finish()
        }
        self.pump.withLock { $0 = pump }
        return stream
    }

    public func setInterest(_ interest: @escaping @Sendable (ServiceInstance, TXTRecord) -> Bool) async {
        await local.setInterest(interest)
        await wideArea.setInterest(interest)
    }

    public func publish(instanceName: String, port: Int, txt: TXTRecord) async {
        await local.publish(instanceName: instanceName, port: port, txt: txt)
        await wideArea.publish(instanceName: instanceName, port: port, txt: txt)
    }

    public func withdraw() async {
        await local.withdraw()
        await wideArea.withdraw()
    }

    public func lookFor(instanceName: String) async {
        await local.lookFor(instanceName: instanceName)
        await wideArea.lookFor(instanceName: instanceName)
    }

    public func stop() async {
        await local.stop()
        await wideArea.stop()
        await pump.withLock({ $0 })?.value
    }
}
