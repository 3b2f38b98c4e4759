"""kube-scheduler's `--feature-gates` (k8s.io/component-base featuregate), for the gates Caldera reads.

Syntax as kube's featureGate.Set: `A=true,B=false` (strconv.ParseBool values: 1, t, T, TRUE, true,
True, 0, f, F, FALSE, false, False; empty items are skipped; the last setting of a gate wins).
Caldera models the gates in MODELED, at kube v1.35.4's defaults, with kube's dependencies
(pkg/features/kube_features.go: GangScheduling needs GenericWorkload). Every other gate kube-scheduler
v1.35.4 knows (its own, the generic API server's, client-go's and the logging gates) is accepted
only when set to its v1.35.4 default, since Caldera behaves as that default; anything else is a
one-line ConfigError, as are names kube does not know ("unrecognized feature gate").

The gates in force are process-wide, as kube's DefaultFeatureGate: the commands install the
parsed gates with `use(gates)` and the code that depends on a gate asks `enabled(name)`.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import ConfigError

FLAG = "--feature-gates"
GENERIC_WORKLOAD = "GenericWorkload"
GANG_SCHEDULING = "GangScheduling"

# The gates Caldera reads: name -> v1.35.4 default (both alpha in 1.35).
MODELED: dict[str, bool] = {GENERIC_WORKLOAD: False, GANG_SCHEDULING: False}
# kube's defaultKubernetesFeatureGateDependencies, for the modeled gates.
DEPENDENCIES: dict[str, tuple[str, ...]] = {GANG_SCHEDULING: (GENERIC_WORKLOAD,), GENERIC_WORKLOAD: ()}



def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Every other gate kube-scheduler v1.35.4 registers, by its default at 1.35 (generated from
# pkg/features/kube_features.go, client-go/features/known_features.go and
# component-base/logs/api/v1/kube_features.go); _LOCKED: LockToDefault at 1.35.
_ON = _names("""
APIResponseCompression APIServerIdentity APIServerTracing AggregatedDiscoveryRemoveBetaType
AllowParsingUserUIDFromCertAuth AnonymousAuthConfigurableEndpoints AnyVolumeDataSource
AuthorizeNodeWithSelectors AuthorizePodWebsocketUpgradeCreatePermission AuthorizeWithSelectors
BtreeWatchCache CPUManagerPolicyBetaOptions CPUManagerPolicyOptions CRDValidationRatcheting
CSIMigrationPortworx CSIServiceAccountTokenSecrets ClearingNominatedNodeNameAfterBinding
ConsistentListFromCache ContainerCheckpoint ContainerRestartRules ContextualLogging
CustomResourceFieldSelectors DRAAdminAccess DRAPrioritizedList DRAResourceClaimDeviceStatus
DRASchedulerFilterTimeout DeclarativeValidation DeploymentReplicaSetTerminatingReplicas
DetectCacheInconsistency DisableAllocatorDualWrite DisableCPUQuotaWithExclusiveCPUs
DisableNodeKubeProxyVersion DynamicResourceAllocation EnvFiles ExecProbeTimeout
ExternalServiceAccountTokenSigner GracefulNodeShutdown GracefulNodeShutdownBasedOnPodPriority
HPAConfigurableTolerance HonorPVReclaimPolicy HostnameOverride ImageMaximumGCAge ImageVolume
InOrderInformers InOrderInformersBatchProcess InPlacePodVerticalScaling InformerResourceVersion
JobBackoffLimitPerIndex JobManagedBy JobPodReplacementPolicy JobSuccessPolicy
KubeletCgroupDriverFromCRI KubeletCrashLoopBackOffMax KubeletEnsureSecretPulledImages
KubeletFineGrainedAuthz KubeletPSI KubeletPodResourcesDynamicResources KubeletPodResourcesGet
KubeletPodResourcesListUseActivePods KubeletSeparateDiskGC
KubeletServiceAccountTokenForCredentialProviders KubeletTracing ListFromCacheSnapshot
LogarithmicScaleDown LoggingBetaOptions MatchLabelKeysInPodAffinity
MatchLabelKeysInPodTopologySpread MatchLabelKeysInPodTopologySpreadSelectorMerge MemoryManager
MultiCIDRServiceAllocator MutableCSINodeAllocatableCount NFTablesProxyMode
NodeInclusionPolicyInPodTopologySpread NodeSwap NominatedNodeNameForExpectation OpenAPIEnums
OpportunisticBatching OrderedNamespaceDeletion PodDeletionCost PodLevelResources
PodLifecycleSleepAction PodLifecycleSleepActionAllowZero PodObservedGenerationTracking
PodReadyToStartContainersCondition PodSchedulingReadiness PodTopologyLabelsAdmission
PortForwardWebsockets PreferSameTrafficDistribution PreventStaticPodAPIReferences ProcMountType
RecoverVolumeExpansionFailure RecursiveReadOnlyMounts RelaxedDNSSearchValidation
RelaxedEnvironmentVariableValidation ReloadKubeletServerCertificateFile RemoteRequestHeaderUID
ResilientWatchCacheInitialization RetryGenerateName RotateKubeletServerCertificate
SELinuxChangePolicy SELinuxMountReadWriteOncePod SchedulerAsyncPreemption SchedulerPopFromBackoffQ
SchedulerQueueingHints SeparateTaintEvictionController ServiceAccountNodeAudienceRestriction
ServiceAccountTokenJTI ServiceAccountTokenNodeBinding ServiceAccountTokenNodeBindingValidation
ServiceAccountTokenPodNodeInfo ServiceTrafficDistribution SidecarContainers
SizeBasedListCostEstimate StatefulSetSemanticRevisionComparison StorageNamespaceIndex
StorageVersionHash StreamingCollectionEncodingToJSON StreamingCollectionEncodingToProtobuf
StructuredAuthenticationConfiguration StructuredAuthenticationConfigurationEgressSelector
StructuredAuthenticationConfigurationJWKSMetrics StructuredAuthorizationConfiguration
SupplementalGroupsPolicy SystemdWatchdog TokenRequestServiceAccountUIDValidation TopologyAwareHints
TopologyManagerPolicyBetaOptions TopologyManagerPolicyOptions TranslateStreamCloseWebsocketRequests
UnauthenticatedHTTP2DOSMitigation UserNamespacesSupport VolumeAttributesClass WatchList
WatchListClient WinDSR WinOverlay WindowsGracefulNodeShutdown
""")
_OFF = _names("""
APIServingWithRoutine AllowDNSOnlyNodeCSR AllowInsecureKubeletCertificateSigningRequests
AllowOverwriteTerminationGracePeriodSeconds AllowUnsafeMalformedObjectDeletion CBORServingAndStorage
CPUCFSQuotaPeriod CPUManagerPolicyAlphaOptions CRDObservedGenerationTracking CSIVolumeHealth
ChangeContainerStatusOnKubeletRestart ClientsAllowCBOR ClientsPreferCBOR
CloudControllerManagerWatchBasedRoutesReconciliation CloudControllerManagerWebhook
ClusterTrustBundle ClusterTrustBundleProjection ComponentFlagz ComponentStatusz
ConcurrentWatchObjectDecode ConstrainedImpersonation ContainerStopSignals CoordinatedLeaderElection
CrossNamespaceVolumeDataSource DRAConsumableCapacity DRADeviceBindingConditions DRADeviceTaintRules
DRADeviceTaints DRAExtendedResource DRAPartitionableDevices DeclarativeValidationTakeover
EventedPLEG GangScheduling GenericWorkload GitRepoVolumeDriver HPAScaleToZero
InPlacePodLevelResourcesVerticalScaling InPlacePodVerticalScalingAllocatedStatus
InPlacePodVerticalScalingExclusiveCPUs InPlacePodVerticalScalingExclusiveMemory
InTreePluginPortworxUnregister KMSv1 KubeletInUserNamespace KubeletRegistrationGetOnExistsOnly
LocalStorageCapacityIsolationFSQuotaMonitoring LoggingAlphaOptions MaxUnavailableStatefulSet
MemoryQoS MutablePVNodeAffinity MutablePodResourcesForSuspendedJobs
MutableSchedulingDirectivesForSuspendedJobs MutatingAdmissionPolicy NodeDeclaredFeatures
NodeLogQuery PodAndContainerStatsFromCRI PodCertificateRequest PodLogsQuerySplitStreams QOSReserved
ReduceDefaultCrashLoopBackOffDecay RelaxedServiceNameValidation ResourceHealthStatus
RestartAllContainersOnContainerExits RuntimeClassInImageCriAPI SELinuxMount SchedulerAsyncAPICalls
SeparateCacheWatchRPC StorageCapacityScoring StorageVersionAPI StorageVersionMigrator
StrictIPCIDRValidation TaintTolerationComparisonOperators TopologyManagerPolicyAlphaOptions
UnknownVersionInteroperabilityProxy UserNamespacesHostNetworkSupport VolumeLimitScaling
WatchCacheInitializationPostStartHook WatchFromStorageWithoutResourceVersion
WindowsCPUAndMemoryAffinity WindowsHostNetwork
""")
_LOCKED = _names("""
APIServerTracing AggregatedDiscoveryRemoveBetaType AllowOverwriteTerminationGracePeriodSeconds
AnonymousAuthConfigurableEndpoints AnyVolumeDataSource AuthorizeNodeWithSelectors
AuthorizeWithSelectors BtreeWatchCache CPUManagerPolicyOptions CRDValidationRatcheting
CSIMigrationPortworx ConsistentListFromCache DisableAllocatorDualWrite DynamicResourceAllocation
ExecProbeTimeout HonorPVReclaimPolicy ImageMaximumGCAge InPlacePodVerticalScaling
JobBackoffLimitPerIndex JobManagedBy JobPodReplacementPolicy JobSuccessPolicy
KubeletCgroupDriverFromCRI KubeletTracing LogarithmicScaleDown MatchLabelKeysInPodAffinity
MemoryManager MultiCIDRServiceAllocator NFTablesProxyMode NodeInclusionPolicyInPodTopologySpread
NodeSwap OrderedNamespaceDeletion PodLifecycleSleepAction PodLifecycleSleepActionAllowZero
PodObservedGenerationTracking PodSchedulingReadiness PreferSameTrafficDistribution
RecoverVolumeExpansionFailure RecursiveReadOnlyMounts RelaxedDNSSearchValidation
RelaxedEnvironmentVariableValidation ResilientWatchCacheInitialization SchedulerQueueingHints
SeparateTaintEvictionController ServiceAccountTokenJTI ServiceAccountTokenNodeBinding
ServiceAccountTokenNodeBindingValidation ServiceAccountTokenPodNodeInfo ServiceTrafficDistribution
StreamingCollectionEncodingToJSON StreamingCollectionEncodingToProtobuf
StructuredAuthenticationConfiguration StructuredAuthorizationConfiguration SupplementalGroupsPolicy
SystemdWatchdog TopologyAwareHints WatchFromStorageWithoutResourceVersion WinDSR WinOverlay
""")
# featuregate's special gates (they set every alpha / beta gate); default false.
_SPECIAL = frozenset({"AllAlpha", "AllBeta"})

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def kube_default(name: str) -> bool | None:
    """v1.35.4's default of a gate kube-scheduler knows; None for a name it does not know."""
    if name in MODELED:
        return MODELED[name]
    if name in _ON:
        return True
    if name in _OFF or name in _SPECIAL:
        return False
    return None


class FeatureGates:
    """The gates in force: the modeled ones, at their defaults unless set."""

    def __init__(self, overrides: dict[str, bool] | None = None):
        self.overrides: dict[str, bool] = dict(overrides or {})

    def enabled(self, name: str) -> bool:
        if name not in MODELED:
            raise KeyError(f"feature gate {name!r} is not one Caldera models")
        return self.overrides.get(name, MODELED[name])

    def __repr__(self) -> str:
        return f"FeatureGates({self.overrides})"


def _fix() -> str:
    modeled = ", ".join(f"{n}={'true' if d else 'false'}" for n, d in sorted(MODELED.items()))
    return (f"write {FLAG} as Name=true|false[,Name=true|false...]; Caldera models {', '.join(sorted(MODELED))} "
            f"(defaults: {modeled}); other kube-scheduler v1.35.4 gates are accepted only at their default")


def parse(text: str) -> FeatureGates:
    """`--feature-gates` as kube parses it (featureGate.Set then SetFromMap); ConfigError on
    anything Caldera cannot honour."""
    m: dict[str, bool] = {}
    for item in text.split(","):
        if not item:
            continue
        k, sep, text_value = item.partition("=")
        k = k.strip()
        if not sep:
            raise ConfigError(f"{FLAG}: missing bool value for {k}; {_fix()}")
        text_value = text_value.strip()
        if text_value in _TRUE:
            m[k] = True
        elif text_value in _FALSE:
            m[k] = False
        else:
            raise ConfigError(f'{FLAG}: invalid value of {k}={text_value}, err: strconv.ParseBool: parsing '
                              f'"{text_value}": invalid syntax; {_fix()}')
    overrides: dict[str, bool] = {}
    for k in m:                  # kube stops at the first unknown name
        if kube_default(k) is None:
            raise ConfigError(f"{FLAG}: unrecognized feature gate: {k}; {_fix()}")
    errs: list[str] = []
    for k, v in m.items():
        default = kube_default(k)
        if k in _LOCKED and v != default:
            errs.append(f"cannot set feature gate {k} to {_b(v)}, feature is locked to {_b(bool(default))}")
        elif k in MODELED:
            overrides[k] = v
        elif v != default:
            errs.append(f"cannot set feature gate {k} to {_b(v)}: Caldera does not model it and behaves as its "
                        f"kube v1.35.4 default ({_b(bool(default))}); leave it out or set it to {_b(bool(default))}")
    if errs:
        raise ConfigError(f"{FLAG}: " + "; ".join(errs))
    gates = FeatureGates(overrides)
    for feature in sorted(DEPENDENCIES):
        if not gates.enabled(feature):
            continue
        off = [d for d in DEPENDENCIES[feature] if not gates.enabled(d)]
        if off:
            raise ConfigError(f"{FLAG}: {feature} is enabled, but depends on features that are disabled: "
                              f"[{' '.join(off)}]; also set {','.join(d + '=true' for d in off)}")
    return gates


def _b(v: bool) -> str:
    return "true" if v else "false"


_current = FeatureGates()


def current() -> FeatureGates:
    return _current


def enabled(name: str) -> bool:
    """Is the modeled gate `name` on in the gates in force?"""
    return _current.enabled(name)


@contextmanager
def use(gates: FeatureGates | None) -> Iterator[FeatureGates]:
    """Put `gates` in force for the block (None: the defaults); the previous ones after it."""
    global _current
    prev = _current
    _current = gates if gates is not None else FeatureGates()
    try:
        yield _current
    finally:
        _current = prev
