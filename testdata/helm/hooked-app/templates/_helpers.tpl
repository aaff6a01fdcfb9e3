{{- define "hooked-app.labels" -}}
app.kubernetes.io/name: hooked-app
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* a Job whose pod ends at once: kwok completes it, or fails it when "fail" is true */}}
{{- define "hooked-app.job" -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .name }}
  labels:
    {{- include "hooked-app.labels" .root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
  annotations:
    {{- toYaml .annotations | nindent 4 }}
spec:
  backoffLimit: 0
  template:
    metadata:
      labels:
        {{- include "hooked-app.labels" .root | nindent 8 }}
        app.kubernetes.io/component: {{ .component }}
      {{- if .fail }}
      annotations:
        hoist.test/exit-code: "1"
      {{- end }}
    spec:
      restartPolicy: Never
      serviceAccountName: {{ .root.Release.Name }}-hooks
      containers:
        - name: {{ .component }}
          image: {{ .root.Values.image }}
          args:
            {{- range .args }}
            - {{ . | quote }}
            {{- end }}
          env:
            - name: APP_VERSION
              value: {{ .root.Values.version | quote }}
{{- end }}
