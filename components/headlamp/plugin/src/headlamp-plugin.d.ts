// The types of the Headlamp plugin API for this package (as the plugin template of @kinvolk/headlamp-plugin has it).
/// <reference types="@kinvolk/headlamp-plugin" />
