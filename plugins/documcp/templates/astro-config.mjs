// Astro configuration (astro.config.mjs) with the Starlight documentation integration.
// Reference: https://starlight.astro.build/reference/configuration/
// Pages live in src/content/docs/; each folder below is one Diataxis section of the sidebar.

// @ts-check
import { defineConfig } from "astro/config";
import starlight from "@astrojs/starlight";

export default defineConfig({
  // site is the origin; base is the path the site is served under ("/" at the root).
  site: "{{site_origin}}",
  base: "{{base_path}}",
  integrations: [
    starlight({
      title: "{{site_name}}",
      description: "{{description}}",
      social: [{ icon: "github", label: "GitHub", href: "{{repository_url}}" }],
      editLink: {
        baseUrl: "{{repository_url}}/edit/{{branch}}/",
      },
      lastUpdated: true,
      sidebar: [
        { label: "Tutorials", autogenerate: { directory: "tutorials" } },
        { label: "How-to guides", autogenerate: { directory: "how-to-guides" } },
        { label: "Reference", autogenerate: { directory: "reference" } },
        { label: "Explanation", autogenerate: { directory: "explanation" } },
      ],
    }),
  ],
});
