package layers

// HelmReleaseName is helmReleaseName, for the tests of package layers_test.
var HelmReleaseName = helmReleaseName
