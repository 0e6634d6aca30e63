// The mixin's configuration. Override any field from your own jsonnet:
//
//   (import 'mixin.libsonnet') + {
//     _config+:: {
//       exporterSelector: 'job="docs-exporter"',
//       runbookURL: 'https://wiki.example.com/mintlify/RUNBOOK.md',
//       thresholds+: { agentJobStuckSeconds: 4 * 3600 },
//     },
//   }
//
// The defaults generate the files shipped in alerts/ and dashboards/ (make mixin).
{
  _config+:: {
    // Label matchers of the scrape job(s) of the exporter, used by MintlifyExporterDown to cover
    // targets that have never come up (every other rule selects on metric names only).
    exporterSelector: 'job=~".*mintlify.*"',

    // Base URL of the runbook; each alert links to <runbookURL>#<alert name in lower case>, so a copy
    // of alerts/RUNBOOK.md (or any page with the same anchors) works.
    runbookURL: 'https://github.com/mintlify-exporter/mintlify_exporter/blob/main/alerts/RUNBOOK.md',

    // Target labels that tell the replicas of one exporter apart: Prometheus' instance, and pod, which
    // the prometheus-operator's ServiceMonitor adds. Replicas sharing a Redis export the analytics
    // series from one of them (the primary), whose instance changes whenever the primary does (every
    // rollout): the week-over-week rules and alerts aggregate these labels away (max without (...)) so
    // that they compare a week of data whichever replica exported it. Add any other per-pod label your
    // relabelling keeps (e.g. pod_template_hash).
    replicaLabels: ['instance', 'pod'],

    // Label matchers of the deployments MintlifyDeploymentFailed watches. By default updates only: an
    // update deploys the production docs, while a failed preview is news for the pull request whose CI
    // triggered it (and follows it through the gateway), not for whoever is on call. Previews too:
    // 'kind=~"update|preview"'; some projects only: 'kind="update",project=~"docs|api-docs"'.
    deploymentFailedSelector: 'kind="update"',

    // Name of the rule group holding the recording rules and, after them, the alerts.
    ruleGroupName: 'mintlify',

    // Dashboards: label matchers added to the query of the "job" variable, which otherwise lists
    // every job exposing mintlify_exporter_build_info (e.g. 'job=~".*mintlify.*"'); '' for none.
    dashboardSelector: '',
    dashboardTags: ['mintlify'],
    dashboardRefresh: '1m',
    // '' is the viewer's browser time zone; 'utc' or an IANA name (e.g. 'Europe/Berlin').
    dashboardTimezone: '',

    // Every alert threshold. Durations are Prometheus durations ('15m'), other values are numbers.
    // The generated rule file lists them in its THRESHOLDS table (thresholdDocs below says where each
    // one is used); the unit tests in alerts/tests pin the behaviour around the defaults.
    thresholds: {
      exporterDownFor: '5m',
      refreshFailingFor: '15m',
      refreshBehindPlanIntervals: 1.5,
      refreshBehindPlanSlackSeconds: 900,
      refreshBehindPlanFor: '15m',
      apiKeyRejectedWindow: '2m',
      apiKeyRejectedFor: '1m',
      apiKeyExpiresSoonDays: 14,
      apiKeyExpiresSoonFor: '1h',
      apiRateLimitedWindow: '10m',
      apiRateLimitedFor: '15m',
      analyticsBudgetContendedWindow: '1h',
      apiErrorsWindow: '5m',
      apiErrorsRatio: 0.5,
      apiErrorsMinRequests: 10,
      apiErrorsFor: '15m',
      agentJobFailedWindow: '2m',
      agentJobStuckSeconds: 7200,
      agentJobStuckFor: '10m',
      agentPollsLaggingIntervals: 3,
      agentPollsLaggingFor: '15m',
      agentJobFailureRatio: 0.5,
      agentJobFailureMinJobs: 5,
      agentJobFailureRatioFor: '15m',
      agentStateWriteWindow: '5m',
      agentStateWriteFor: '10m',
      deploymentFailedLookback: '24h',
      deploymentStuckSeconds: 1800,
      deploymentStuckFor: '5m',
      staticExportFailedLookback: '24h',
      staticExportStuckSeconds: 3600,
      staticExportStuckFor: '5m',
      staticExportUnknownFor: '5m',
      humanVisitorsDropRatio: 0.5,
      humanVisitorsDropMinVisitors: 100,
      humanVisitorsDropFor: '30m',
      aiShareSurgePoints: 0.2,
      aiShareSurgeMinVisitors: 100,
      aiShareSurgeFor: '30m',
      agentCreateUnknownFor: '5m',
      deploymentUnknownFor: '5m',
      automationUnknownFor: '5m',
      configReloadFailedFor: '5m',
      assistantUnansweredRatio: 0.3,
      assistantUnansweredMinConversations: 20,
      assistantUnansweredFor: '1h',
      feedbackPendingDays: 3,
      feedbackPendingFor: '1h',
      thumbsDownRatio: 0.5,
      thumbsDownMinVotes: 10,
      thumbsDownFor: '1h',
      clusterRedisDownFor: '5m',
      clusterNoPrimaryFor: '5m',
      clusterSeveralPrimariesFor: '5m',
      agentStateLostFor: '1m',
    },

    // One row per threshold, in the order of the THRESHOLDS table: the alert using it, where
    // (expr or for) and what it means. mixin/mixin_test.go checks that every threshold has a row and
    // that changing it changes that alert.
    thresholdDocs:: [
      { key: 'exporterDownFor', alert: 'MintlifyExporterDown', field: 'for', meaning: 'target down (up == 0) this long' },
      { key: 'refreshFailingFor', alert: 'MintlifyAnalyticsRefreshFailing', field: 'for', meaning: 'refresh failing this long (3 x the shortest planned interval, 5m)' },
      { key: 'refreshBehindPlanIntervals', alert: 'MintlifyAnalyticsRefreshBehindPlan', field: 'expr', meaning: 'data older than this many planned intervals ...' },
      { key: 'refreshBehindPlanSlackSeconds', alert: 'MintlifyAnalyticsRefreshBehindPlan', field: 'expr', meaning: '... plus these seconds (a late or slow walk on a short plan)' },
      { key: 'refreshBehindPlanFor', alert: 'MintlifyAnalyticsRefreshBehindPlan', field: 'for', meaning: '... this long' },
      { key: 'apiKeyRejectedWindow', alert: 'MintlifyAPIKeyRejected', field: 'expr', meaning: 'window in which a 401/403 response counts' },
      { key: 'apiKeyRejectedFor', alert: 'MintlifyAPIKeyRejected', field: 'for', meaning: '401/403 responses seen this long' },
      { key: 'apiKeyExpiresSoonDays', alert: 'MintlifyAPIKeyExpiresSoon', field: 'expr', meaning: 'days before the configured expiry of an API key (api_key_expires) from which it fires' },
      { key: 'apiKeyExpiresSoonFor', alert: 'MintlifyAPIKeyExpiresSoon', field: 'for', meaning: '... this long (a wrong date fixed by a reload does not fire)' },
      { key: 'apiRateLimitedWindow', alert: 'MintlifyAPIRateLimited', field: 'expr', meaning: 'window in which a 429 response to a job endpoint counts' },
      { key: 'apiRateLimitedFor', alert: 'MintlifyAPIRateLimited', field: 'for', meaning: '429 responses seen this long' },
      { key: 'analyticsBudgetContendedWindow', alert: 'MintlifyAnalyticsBudgetContended', field: 'expr', meaning: 'window in which an analytics 429 counts (the budget stays halved that long)' },
      { key: 'apiErrorsWindow', alert: 'MintlifyAPIErrors', field: 'expr', meaning: 'window of the error share and of the volume guard (shorter than for:)' },
      { key: 'apiErrorsRatio', alert: 'MintlifyAPIErrors', field: 'expr', meaning: 'share of requests ending in 5xx or a transport error' },
      { key: 'apiErrorsMinRequests', alert: 'MintlifyAPIErrors', field: 'expr', meaning: 'minimum requests to the endpoint in that window (volume guard)' },
      { key: 'apiErrorsFor', alert: 'MintlifyAPIErrors', field: 'for', meaning: '... above that this long' },
      { key: 'agentJobFailedWindow', alert: 'MintlifyAgentJobFailed', field: 'expr', meaning: 'window after a failure during which the alert fires' },
      { key: 'agentJobStuckSeconds', alert: 'MintlifyAgentJobStuck', field: 'expr', meaning: 'age in seconds of the oldest running turn of an agent job' },
      { key: 'agentJobStuckFor', alert: 'MintlifyAgentJobStuck', field: 'for', meaning: '... above that this long' },
      { key: 'agentPollsLaggingIntervals', alert: 'MintlifyAgentPollsLagging', field: 'expr', meaning: 'most overdue poll, in poll intervals (--agent.poll-interval)' },
      { key: 'agentPollsLaggingFor', alert: 'MintlifyAgentPollsLagging', field: 'for', meaning: '... above that this long' },
      { key: 'agentJobFailureRatio', alert: 'MintlifyAgentJobFailureRatioHigh', field: 'expr', meaning: 'failed / (completed + failed) over the last 24h' },
      { key: 'agentJobFailureMinJobs', alert: 'MintlifyAgentJobFailureRatioHigh', field: 'expr', meaning: 'minimum completed + failed jobs in 24h (volume guard)' },
      { key: 'agentJobFailureRatioFor', alert: 'MintlifyAgentJobFailureRatioHigh', field: 'for', meaning: 'ratio above threshold this long' },
      { key: 'agentStateWriteWindow', alert: 'MintlifyAgentStateWriteFailing', field: 'expr', meaning: 'window in which a failed agent state file write counts' },
      { key: 'agentStateWriteFor', alert: 'MintlifyAgentStateWriteFailing', field: 'for', meaning: 'failed writes seen this long (a single failed write does not fire)' },
      { key: 'deploymentFailedLookback', alert: 'MintlifyDeploymentFailed', field: 'expr', meaning: 'how long a failed deployment not followed by a success keeps it firing' },
      { key: 'deploymentStuckSeconds', alert: 'MintlifyDeploymentStuck', field: 'expr', meaning: 'age in seconds of the oldest deployment queued or in progress (longer than any build takes)' },
      { key: 'deploymentStuckFor', alert: 'MintlifyDeploymentStuck', field: 'for', meaning: '... above that this long (its end may be a poll or two from being seen)' },
      { key: 'staticExportFailedLookback', alert: 'MintlifyStaticExportFailed', field: 'expr', meaning: 'how long a failed static export not followed by a completed one keeps it firing' },
      { key: 'staticExportStuckSeconds', alert: 'MintlifyStaticExportStuck', field: 'expr', meaning: 'age in seconds of the oldest static export queued or running' },
      { key: 'staticExportStuckFor', alert: 'MintlifyStaticExportStuck', field: 'for', meaning: '... above that this long' },
      { key: 'staticExportUnknownFor', alert: 'MintlifyStaticExportOutcomeUnknown', field: 'for', meaning: 'static export starts of unknown outcome waiting this long for an operator' },
      { key: 'humanVisitorsDropRatio', alert: 'MintlifyHumanVisitorsDrop', field: 'expr', meaning: 'human visitors now / same time a week earlier' },
      { key: 'humanVisitorsDropMinVisitors', alert: 'MintlifyHumanVisitorsDrop', field: 'expr', meaning: 'minimum human visitors a week earlier (volume guard)' },
      { key: 'humanVisitorsDropFor', alert: 'MintlifyHumanVisitorsDrop', field: 'for', meaning: 'ratio below threshold this long' },
      { key: 'aiShareSurgePoints', alert: 'MintlifyAITrafficShareSurge', field: 'expr', meaning: 'rise of the AI share (ai / (human + ai)) vs a week earlier' },
      { key: 'aiShareSurgeMinVisitors', alert: 'MintlifyAITrafficShareSurge', field: 'expr', meaning: 'minimum human + ai visitors now (volume guard)' },
      { key: 'aiShareSurgeFor', alert: 'MintlifyAITrafficShareSurge', field: 'for', meaning: 'rise above threshold this long' },
      { key: 'agentCreateUnknownFor', alert: 'MintlifyAgentCreateOutcomeUnknown', field: 'for', meaning: 'creates of unknown outcome waiting this long for an operator' },
      { key: 'deploymentUnknownFor', alert: 'MintlifyDeploymentOutcomeUnknown', field: 'for', meaning: 'deployment triggers of unknown outcome waiting this long for an operator' },
      { key: 'automationUnknownFor', alert: 'MintlifyAutomationOutcomeUnknown', field: 'for', meaning: 'automation triggers of unknown outcome waiting this long for an operator' },
      { key: 'configReloadFailedFor', alert: 'MintlifyConfigReloadFailed', field: 'for', meaning: 'last configuration reload failed this long ago (time to fix and reload)' },
      { key: 'assistantUnansweredRatio', alert: 'MintlifyAssistantUnansweredRatioHigh', field: 'expr', meaning: "unanswered / all turns (questions) to the AI assistant today (window 1d)" },
      { key: 'assistantUnansweredMinConversations', alert: 'MintlifyAssistantUnansweredRatioHigh', field: 'expr', meaning: 'minimum turns today (volume guard)' },
      { key: 'assistantUnansweredFor', alert: 'MintlifyAssistantUnansweredRatioHigh', field: 'for', meaning: 'ratio above threshold this long' },
      { key: 'feedbackPendingDays', alert: 'MintlifyFeedbackPendingTooLong', field: 'expr', meaning: 'age in days of the oldest feedback pending triage (below the widest feedback_items window)' },
      { key: 'feedbackPendingFor', alert: 'MintlifyFeedbackPendingTooLong', field: 'for', meaning: '... above that this long' },
      { key: 'thumbsDownRatio', alert: 'MintlifyPageThumbsDownRatioHigh', field: 'expr', meaning: "a page's thumbs_down / (thumbs_up + thumbs_down) over window 7d" },
      { key: 'thumbsDownMinVotes', alert: 'MintlifyPageThumbsDownRatioHigh', field: 'expr', meaning: 'minimum thumbs votes of the page in 7d (volume guard)' },
      { key: 'thumbsDownFor', alert: 'MintlifyPageThumbsDownRatioHigh', field: 'for', meaning: 'ratio above threshold this long' },
      { key: 'clusterRedisDownFor', alert: 'MintlifyClusterRedisDown', field: 'for', meaning: 'a replica cannot reach the shared Redis this long (longer than a Redis restart or failover)' },
      { key: 'clusterNoPrimaryFor', alert: 'MintlifyClusterNoPrimary', field: 'for', meaning: 'no primary among replicas that reach Redis this long (keep it above a few cluster.lease_duration)' },
      { key: 'clusterSeveralPrimariesFor', alert: 'MintlifyClusterSeveralPrimaries', field: 'for', meaning: 'more than one primary this long (a brief overlap at a handover does not fire)' },
      { key: 'agentStateLostFor', alert: 'MintlifyAgentStateLost', field: 'for', meaning: 'the agent job state in Redis found lost this long (it stays lost until an operator acts)' },
    ],
  },
}
